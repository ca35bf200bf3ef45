// `pipec emit FILE --target ...`: runs the front end and writes one of the
// intermediate forms. Nothing is written when there are errors.
// `--target cpu|cuda` writes a program, so it runs the checks too: nothing
// unproved is emitted. The CUDA program's overlap plans use the schedule's
// `costs { }` block with --costs/--cost on top, as `pipec sim` does (with a
// default sub-operation split where none is given: codegen/StreamLowering.h).
#include "driver/Commands.h"
#include "driver/Reporting.h"

#include "codegen/CpuEmitter.h"
#include "codegen/CudaEmitter.h"
#include "codegen/StreamLowering.h"
#include "emit/IRPrinter.h"
#include "emit/TorchCsvWriter.h"
#include "syntax/AstDumper.h"

#include "llvm/Support/raw_ostream.h"

namespace pipec {

int runEmit(const std::string &file, EmitTarget target, const std::string &output,
            const CommonArgs &args) {
  Compilation compilation(file);
  bool ok = target == EmitTarget::AST
                ? compilation.load() && compilation.parse() && compilation.resolve()
                : compilation.runFrontEnd(args.elab);
  if (ok && (target == EmitTarget::Cpu || target == EmitTarget::Cuda))
    ok = compilation.check(args.checks);
  int status = finish(compilation, args);
  if (!ok || status != kExitClean)
    return status;

  bool written = writeOutputFile(output, [&](llvm::raw_ostream &out) {
    if (target == EmitTarget::AST)
      dumpAST(*compilation.ast(), compilation.sources(), out);
    else if (target == EmitTarget::TorchCsv)
      writeTorchCsv(*compilation.ir(), out);
    else if (target == EmitTarget::Cpu)
      emitCpuProgram(*compilation.ir(), *compilation.report(), file, out);
    else if (target == EmitTarget::Cuda)
      emitCudaProgram(*compilation.ir(), *compilation.report(),
                      streamPlanCosts(*compilation.ir(), args.costs), file, out);
    else
      printIR(*compilation.ir(), out);
  });
  return written ? kExitClean : kExitUsage;
}

} // namespace pipec
