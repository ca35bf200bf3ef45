// `pipec fmt FILE... [-i | --check]`: prints each file in the canonical layout
// (formatter/CanonicalLayout.h), rewrites it in place (-i), or, for CI, prints a unified diff
// of what would change and fails (--check). A file that does not parse is
// reported and left alone; a layout that would change the schedule's meaning is
// refused as a formatter bug (exit 2) and nothing is written.
#include "driver/Commands.h"
#include "support/InputFile.h"

#include "diag/DiagnosticRenderer.h"
#include "formatter/Formatter.h"
#include "formatter/UnifiedDiff.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace pipec {

namespace {

// Writes `text` over `path` through a temporary file beside it, so that a
// failed write leaves the original whole.
bool replaceFile(const std::string &path, llvm::StringRef text) {
  llvm::SmallString<256> temporary;
  int fd;
  std::error_code error = llvm::sys::fs::createUniqueFile(path + ".fmt-%%%%%%", fd, temporary);
  if (!error) {
    {
      llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
      out << text;
      out.close();
      if (out.has_error()) {
        error = out.error();
        out.clear_error();
      }
    }
    if (!error) {
      llvm::ErrorOr<llvm::sys::fs::perms> mode = llvm::sys::fs::getPermissions(path);
      if (mode)
        llvm::sys::fs::setPermissions(temporary, *mode);
      error = llvm::sys::fs::rename(temporary, path);
    }
    if (error)
      llvm::sys::fs::remove(temporary);
  }
  if (error)
    llvm::errs() << "pipec: error: cannot write '" << path << "': " << error.message() << "\n";
  return !error;
}

int formatFile(const std::string &path, const FmtArgs &args) {
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> buffer = readInputFile(path, error);
  if (!buffer) {
    llvm::errs() << "pipec: error: cannot read '" << path << "': " << error << "\n";
    return kExitUsage;
  }
  llvm::StringRef source = buffer->getBuffer();
  formatter::FormatResult result = formatter::formatSource(path, source);
  switch (result.status) {
  case formatter::FormatResult::Rejected:
    renderText(result.compilation->diags(), llvm::errs(), args.color);
    llvm::errs() << "pipec: '" << path << "' was not formatted: it has errors\n";
    return kExitErrors;
  case formatter::FormatResult::Unsafe:
    llvm::errs() << "pipec: error: formatter bug on '" << path << "': " << result.problem
                 << "; nothing was written (please report this file)\n";
    return kExitUsage;
  case formatter::FormatResult::Formatted:
    break;
  }
  if (args.check) {
    std::string diff = formatter::unifiedDiff(source, result.text, path);
    llvm::outs() << diff;
    return diff.empty() ? kExitClean : kExitErrors;
  }
  if (args.inPlace)
    return result.text == source || replaceFile(path, result.text) ? kExitClean : kExitUsage;
  llvm::outs() << result.text;
  return kExitClean;
}

} // namespace

int runFmt(const std::vector<std::string> &files, const FmtArgs &args) {
  int status = kExitClean;
  unsigned unformatted = 0;
  for (const std::string &file : files) {
    int fileStatus = formatFile(file, args);
    unformatted += args.check && fileStatus == kExitErrors;
    status = std::max(status, fileStatus);
  }
  if (args.check && unformatted > 0)
    llvm::errs() << "pipec: " << unformatted << " of " << files.size()
                 << " file(s) not formatted or not parsed; run 'pipec fmt -i' on them\n";
  return status;
}

} // namespace pipec
