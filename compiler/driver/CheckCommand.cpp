// `pipec check FILE...`: runs the front end (and, as they are added, the checks)
// on every file and reports what is wrong. Files are independent.
#include "driver/Commands.h"
#include "driver/Reporting.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace pipec {

int runCheck(const std::vector<std::string> &files, const CommonArgs &args) {
  int status = kExitClean;
  unsigned errors = 0, warnings = 0, failed = 0;
  for (const std::string &file : files) {
    Compilation compilation(file);
    compilation.runFrontEnd(args.elab);
    int fileStatus = finish(compilation, args);
    errors += compilation.diags().errorCount();
    warnings += compilation.diags().warningCount();
    failed += fileStatus != kExitClean;
    status = std::max(status, fileStatus);
  }
  if (files.size() > 1)
    llvm::errs() << files.size() << " files checked: " << failed << " with problems, " << errors
                 << " error(s), " << warnings << " warning(s)\n";
  return status;
}

} // namespace pipec
