// `pipec check FILE...`: runs the front end and every check on each file and
// reports what is wrong: as text on stderr, or as one JSON / SARIF / GitHub
// document on stdout for CI. Files are independent.
//
// A file that declares parameter domains (or a -D with several values) is
// checked at every point of the product (frontend/DomainCheck.h); otherwise at
// its defaults and -D values, as one point.
#include "driver/Commands.h"
#include "frontend/DomainCheck.h"
#include "driver/Explain.h"
#include "driver/Reporting.h"

#include "diag/LintRenderers.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <memory>

namespace pipec {

namespace {

std::string plural(uint64_t count, const char *word) {
  return std::to_string(count) + " " + word + (count == 1 ? "" : "s");
}

// "checked 968 points (P in 2..17, M in P..8*P+1): 960 ok, 8 unsupported, 0 failed"
void printPointSummary(const Compilation &compilation, const PointSummary &points) {
  llvm::errs() << compilation.path() << ": checked "
               << plural(points.points - points.unchecked, "point") << " (" << points.description
               << "): " << points.ok << " ok, " << points.unsupported << " unsupported, "
               << points.failed << " failed";
  if (points.unchecked)
    llvm::errs() << ", " << points.unchecked << " not checked (--fail-fast)";
  if (!points.failingPoint.empty())
    llvm::errs() << "; the " << (points.unchecked ? "smallest found" : "smallest")
                 << " failing point, " << points.failingPoint << ", is reported";
  llvm::errs() << "\n";
}

// Runs the checks of one file: at one point into the compilation itself, or at
// every point of its domain. Returns whether everything checked passed.
bool checkFile(Compilation &compilation, const CommonArgs &args) {
  if (!compilation.load() || !compilation.parse() || !compilation.resolve() ||
      !compilation.checkFlagNames(args.elab.flagNames) ||
      !compilation.buildDomain(args.defines, args.maxPoints))
    return false;
  const ParameterDomain &domain = *compilation.domain();
  if (domain.points.size() == 1) {
    ElabOptions elab = domain.optionsAt(0, args.elab);
    return compilation.elaborate(elab) && compilation.check(args.checks);
  }
  DomainCheckOptions options{args.jobs, args.failFast, args.errorLimit};
  compilation.points() = checkDomain(compilation, domain, args.elab, args.checks, options);
  return !compilation.diags().hasErrors();
}

// --explain over a domain describes one point: the defaults (with the one-value
// -D's), which is what emit, build and sim use.
void explainDefaults(Compilation &compilation, const CommonArgs &args) {
  DiagnosticEngine scratch(compilation.sources()); // the domain check reported already
  std::optional<ScheduleIR> ir = elaborate(*compilation.ast(), args.elab, scratch);
  if (!ir)
    return;
  CheckReport report = runChecks(*ir, args.checks, scratch);
  if (!report.ok)
    return;
  std::string values;
  for (const auto &[name, value] : ir->params)
    values += (values.empty() ? "" : ", ") + name + "=" + std::to_string(value);
  llvm::outs() << "at " << values << " (the defaults; -D chooses another point):\n";
  explainSchedule(*ir, report, llvm::outs());
}

} // namespace

int runCheck(const std::vector<std::string> &files, const CommonArgs &args) {
  std::vector<std::unique_ptr<Compilation>> compilations;
  int status = kExitClean;
  unsigned errors = 0, warnings = 0, failed = 0;
  for (const std::string &file : files) {
    auto compilation = std::make_unique<Compilation>(file);
    compilation->diags().setErrorLimit(args.errorLimit);
    compilation->diags().setWarningPolicy(args.warnings);
    bool ok = checkFile(*compilation, args);
    int fileStatus = kExitClean;
    if (args.format == DiagFormat::Text) {
      fileStatus = finish(*compilation, args);
      if (compilation->points() && !compilation->points()->overBudget)
        printPointSummary(*compilation, *compilation->points());
    } else { // one document for all files, below
      printPassTimes(*compilation, args);
      fileStatus = exitStatus(*compilation, args);
    }
    if (ok && args.explain && compilation->ir())
      explainSchedule(*compilation->ir(), *compilation->report(), llvm::outs());
    else if (ok && args.explain && compilation->points())
      explainDefaults(*compilation, args);
    errors += compilation->diags().errorCount();
    warnings += compilation->diags().warningCount();
    failed += fileStatus != kExitClean;
    status = std::max(status, fileStatus);
    compilations.push_back(std::move(compilation));
  }

  if (args.format != DiagFormat::Text) {
    std::vector<FileDiagnostics> all;
    for (const auto &c : compilations)
      all.push_back(c->lintFile());
    renderLint(all, args);
  } else if (files.size() > 1) {
    llvm::errs() << files.size() << " files checked: " << failed << " with problems, " << errors
                 << " error(s), " << warnings << " warning(s)\n";
  }
  return status;
}

} // namespace pipec
