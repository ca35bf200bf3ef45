#include "driver/Reporting.h"

#include "diag/DiagnosticRenderer.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace pipec {

int exitStatus(Compilation &compilation, const CommonArgs &args) {
  const DiagnosticEngine &diags = compilation.diags();
  for (const Diagnostic &d : diags.diagnostics())
    if (d.kind == DiagKind::FileNotReadable)
      return kExitUsage;
  if (diags.hasErrors() || (args.werror && diags.warningCount() > 0))
    return kExitErrors;
  return kExitClean;
}

int finish(Compilation &compilation, const CommonArgs &args) {
  renderText(compilation.diags(), llvm::errs(), args.color);
  if (args.timePasses) {
    llvm::errs() << "pass times for " << compilation.path() << ":\n";
    for (const PassTime &t : compilation.times())
      llvm::errs() << llvm::format("  %-10s %10.3f ms\n", t.pass.c_str(), t.milliseconds);
  }
  return exitStatus(compilation, args);
}

} // namespace pipec
