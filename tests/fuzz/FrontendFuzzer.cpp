// libFuzzer target: any bytes through the whole front end and every check, by
// the driver's own pipeline (parse, resolve, elaborate, check), then the IR
// printer and every diagnostic renderer. It must never crash or hang; limits
// are lowered so that every input finishes quickly.
#include "diag/DiagnosticRenderer.h"
#include "diag/LintRenderers.h"
#include "frontend/Compilation.h"
#include "elab/IRPrinter.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace pipec;
  auto compilation = Compilation::fromText(
      "fuzz.pipe", llvm::StringRef(reinterpret_cast<const char *>(data), size));
  ElabOptions options;
  options.limits.maxOps = 20000;
  options.limits.maxIterations = 200000;
  CheckOptions checks;
  checks.maxActivations = 3;
  compilation->runAll(options, checks);
  if (const ScheduleIR *ir = compilation->ir())
    printIR(*ir, llvm::nulls());
  renderText(compilation->diags(), llvm::nulls(), false);
  FileDiagnostics file{"fuzz.pipe", &compilation->diags()};
  renderSarif(file, llvm::nulls());
  renderGithub(file, llvm::nulls());
  return 0;
}
