// libFuzzer target: any bytes through the whole front end and every check
// (parse, resolve, elaborate, check, print IR and diagnostics). It must never crash or hang; limits are
// lowered so that every input finishes quickly.
#include "check/Checks.h"
#include "diag/DiagnosticRenderer.h"
#include "diag/LintRenderers.h"
#include "elab/Elaborator.h"
#include "emit/IRPrinter.h"
#include "sema/NameResolver.h"
#include "syntax/Parser.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace pipec;
  llvm::SourceMgr sources;
  DiagnosticEngine diags(sources);
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  unsigned buffer = sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, "fuzz.pipe"), llvm::SMLoc());
  std::unique_ptr<ast::Schedule> schedule = parseSchedule(buffer, diags);
  if (schedule && resolveNames(*schedule, diags)) {
    ElabOptions options;
    options.limits.maxOps = 20000;
    options.limits.maxIterations = 200000;
    if (auto ir = elaborate(*schedule, options, diags)) {
      printIR(*ir, llvm::nulls());
      CheckOptions checks;
      checks.maxActivations = 3;
      runChecks(*ir, checks, diags);
    }
  }
  renderText(diags, llvm::nulls(), false);
  FileDiagnostics file{"fuzz.pipe", &diags};
  renderSarif(file, llvm::nulls());
  renderGithub(file, llvm::nulls());
  return 0;
}
