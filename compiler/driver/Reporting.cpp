#include "driver/Reporting.h"

#include "diag/DiagnosticRenderer.h"
#include "support/NumberText.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

namespace pipec {

int exitStatus(const DiagnosticEngine &diags, const CommonArgs &args) {
  for (const Diagnostic &d : diags.diagnostics())
    if (d.kind == DiagKind::FileNotReadable)
      return kExitUsage;
  if (diags.hasErrors() || (args.werror && diags.werrorWarningCount() > 0))
    return kExitErrors;
  return kExitClean;
}

int finish(Compilation &compilation, const CommonArgs &args) {
  if (args.format == DiagFormat::Text) {
    renderText(compilation.diags(), llvm::errs(), args.color);
  } else {
    FileDiagnostics file[] = {{compilation.path(), &compilation.diags()}};
    renderLint(file, args);
  }
  printPassTimes(compilation, args);
  return exitStatus(compilation, args);
}

void printPassTimes(const Compilation &compilation, const CommonArgs &args) {
  if (!args.timePasses)
    return;
  llvm::errs() << "pass times for " << compilation.path() << ":\n";
  for (const PassTime &t : compilation.times())
    llvm::errs() << "  " << llvm::left_justify(t.pass, 10) << " "
                 << llvm::right_justify(formatFixed(t.milliseconds, 3), 10) << " ms\n";
}

void renderLint(llvm::ArrayRef<FileDiagnostics> files, const CommonArgs &args) {
  if (args.format == DiagFormat::Json)
    renderJson(files, llvm::outs());
  else if (args.format == DiagFormat::Sarif)
    renderSarif(files, llvm::outs());
  else
    renderGithub(files, llvm::outs());
}

bool writeOutputFile(const std::string &path, const std::function<void(llvm::raw_ostream &)> &write) {
  std::error_code error;
  llvm::ToolOutputFile out(path, error, llvm::sys::fs::OF_Text);
  if (error) {
    llvm::errs() << "pipec: error: cannot write '" << path << "': " << error.message() << "\n";
    return false;
  }
  write(out.os());
  out.os().close();
  if (out.os().has_error()) { // e.g. the disk filled up: report it, keep nothing
    llvm::errs() << "pipec: error: cannot write '" << path << "': " << out.os().error().message()
                 << "\n";
    out.os().clear_error();
    return false;
  }
  out.keep();
  return true;
}

} // namespace pipec
