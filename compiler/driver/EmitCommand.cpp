// `pipec emit FILE --target ...`: runs the front end and writes one of the
// intermediate forms. Nothing is written when there are errors.
// `--target cpu|cuda` writes a program, so it runs the checks too: nothing
// unproved is emitted (driver/EmitProgram.h, shared with `pipec build`), and so
// does `--target json`, the program for the Python runtime (codegen/ProgramJson.h).
#include "driver/Commands.h"
#include "codegen/RuntimeSupport.h"
#include "driver/EmitProgram.h"
#include "driver/Reporting.h"

#include "codegen/ProgramJson.h"
#include "elab/IRPrinter.h"
#include "interop/TorchCsvWriter.h"
#include "interop/TorchLossOrder.h"
#include "syntax/AstDumper.h"

#include "llvm/Support/raw_ostream.h"

namespace pipec {

int runEmit(const std::string &file, EmitTarget target, const std::string &output,
            const CommonArgs &args) {
  Compilation compilation(file);
  compilation.diags().setErrorLimit(args.errorLimit);
  compilation.diags().setWarningPolicy(args.warnings);
  bool ok = target == EmitTarget::AST
                ? compilation.load() && compilation.parse() && compilation.resolve()
                : compilation.runFrontEnd(args.elab);
  if (ok && (target == EmitTarget::Cpu || target == EmitTarget::Cuda ||
             target == EmitTarget::Json))
    ok = compilation.check(args.checks) &&
         checkRuntimeSupport(*compilation.ir(),
                             target == EmitTarget::Cpu    ? RuntimeTarget::CpuProgram
                             : target == EmitTarget::Cuda ? RuntimeTarget::CudaProgram
                                                          : RuntimeTarget::JsonProgram,
                             compilation.diags());
  if (ok && target == EmitTarget::TorchCsv) {
    ok = checkTorchCsvPlacement(*compilation.ir(), compilation.diags()) &&
         checkRuntimeSupport(*compilation.ir(), RuntimeTarget::TorchCsv, compilation.diags());
    if (ok) // a warning: the CSV is still written (it runs in pipec's runtimes)
      checkTorchLossOrder(*compilation.ir(), compilation.diags());
  }
  int status = finish(compilation, args);
  if (!ok || status != kExitClean)
    return status;

  bool written = writeOutputFile(output, [&](llvm::raw_ostream &out) {
    if (target == EmitTarget::AST)
      dumpAST(*compilation.ast(), compilation.sources(), out);
    else if (target == EmitTarget::TorchCsv)
      writeTorchCsv(*compilation.ir(), out);
    else if (target == EmitTarget::Cpu)
      emitProgram(compilation, BuildTarget::Cpu, args, out);
    else if (target == EmitTarget::Cuda)
      emitProgram(compilation, BuildTarget::Cuda, args, out);
    else if (target == EmitTarget::Json)
      writeProgramJson(*compilation.ir(), *compilation.report(), compilation.path(), out);
    else
      printIR(*compilation.ir(), out);
  });
  return written ? kExitClean : kExitUsage;
}

} // namespace pipec
