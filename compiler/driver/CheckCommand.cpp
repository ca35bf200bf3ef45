// `pipec check FILE...`: runs the front end and every check on each file and
// reports what is wrong: as text on stderr, or as one JSON / SARIF / GitHub
// document on stdout for CI. Files are independent.
#include "driver/Commands.h"
#include "driver/Explain.h"
#include "driver/Reporting.h"

#include "diag/LintRenderers.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <memory>

namespace pipec {

int runCheck(const std::vector<std::string> &files, const CommonArgs &args) {
  std::vector<std::unique_ptr<Compilation>> compilations;
  int status = kExitClean;
  unsigned errors = 0, warnings = 0, failed = 0;
  for (const std::string &file : files) {
    auto compilation = std::make_unique<Compilation>(file);
    compilation->diags().setErrorLimit(args.errorLimit);
    compilation->diags().setWarningPolicy(args.warnings);
    bool ok = compilation->runAll(args.elab, args.checks);
    int fileStatus = kExitClean;
    if (args.format == DiagFormat::Text) {
      fileStatus = finish(*compilation, args);
    } else { // one document for all files, below
      printPassTimes(*compilation, args);
      fileStatus = exitStatus(*compilation, args);
    }
    if (ok && args.explain)
      explainSchedule(*compilation->ir(), *compilation->report(), llvm::outs());
    errors += compilation->diags().errorCount();
    warnings += compilation->diags().warningCount();
    failed += fileStatus != kExitClean;
    status = std::max(status, fileStatus);
    compilations.push_back(std::move(compilation));
  }

  if (args.format != DiagFormat::Text) {
    std::vector<FileDiagnostics> all;
    for (const auto &c : compilations)
      all.push_back({c->path(), &c->diags()});
    renderLint(all, args);
  } else if (files.size() > 1) {
    llvm::errs() << files.size() << " files checked: " << failed << " with problems, " << errors
                 << " error(s), " << warnings << " warning(s)\n";
  }
  return status;
}

} // namespace pipec
