// One input file taken through the front-end phases, in order:
//   load -> parse (AST) -> resolve names -> elaborate (ScheduleIR) -> check.
// Each phase runs only if the previous one succeeded; each can be timed.
// The input is a file (or "-", standard input) or, for tests and the fuzzer,
// text already in memory (fromText).
#pragma once

#include "check/Checks.h"
#include "diag/Diagnostics.h"
#include "diag/LintRenderers.h"
#include "elab/Domain.h"
#include "elab/Elaborator.h"
#include "elab/ScheduleIR.h"
#include "syntax/AST.h"

#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pipec {

struct PassTime {
  std::string pass;
  double milliseconds;
};

class Compilation {
public:
  explicit Compilation(std::string path) : path_(std::move(path)) {}
  // A compilation of `text` as if read from a file called `name`: load() has
  // nothing left to do.
  static std::unique_ptr<Compilation> fromText(std::string name, llvm::StringRef text);
  Compilation(const Compilation &) = delete;
  Compilation &operator=(const Compilation &) = delete;

  // Returns false on an I/O error (reported as a diagnostic); true at once when
  // the text is already loaded.
  bool load();
  bool parse();
  bool resolve();
  // Refuses a command-line name that means both a parameter and a cost (after parse()).
  bool checkFlagNames(llvm::ArrayRef<FlagName> names);
  // The points to check: the declared domains under the -D's (after resolve()).
  bool buildDomain(llvm::ArrayRef<ParamDefine> defines, uint64_t maxPoints);
  bool elaborate(const ElabOptions &options);
  bool check(const CheckOptions &options);

  // Runs every phase up to elaboration; stops at the first that fails.
  bool runFrontEnd(const ElabOptions &options) {
    return load() && parse() && resolve() && checkFlagNames(options.flagNames) &&
           elaborate(options);
  }
  bool runAll(const ElabOptions &elab, const CheckOptions &checks) {
    return runFrontEnd(elab) && check(checks);
  }

  const std::string &path() const { return path_; }
  DiagnosticEngine &diags() { return diags_; }
  llvm::SourceMgr &sources() { return sources_; }
  const ast::Schedule *ast() const { return ast_.get(); }
  const ScheduleIR *ir() const { return ir_ ? &*ir_ : nullptr; }
  const CheckReport *report() const { return report_ ? &*report_ : nullptr; }
  const ParameterDomain *domain() const { return domain_ ? &*domain_ : nullptr; }
  // Set when the file was checked at several points (frontend/DomainCheck.h).
  std::optional<PointSummary> &points() { return points_; }
  FileDiagnostics lintFile() const {
    return {path_, &diags_, points_ ? &*points_ : nullptr};
  }
  // Once the checks ran: drops what only their diagnostics read, before a simulation
  // that may be as large as the schedule.
  void releaseCheckContext() {
    if (ir_)
      ir_->releaseIterations();
  }
  const std::vector<PassTime> &times() const { return times_; }

private:
  template <typename Fn> bool timed(const char *pass, Fn fn);

  std::string path_;
  llvm::SourceMgr sources_;
  DiagnosticEngine diags_{sources_};
  unsigned buffer_ = 0; // 0: not loaded yet (SourceMgr ids start at 1)
  std::unique_ptr<ast::Schedule> ast_;
  std::optional<ScheduleIR> ir_;
  std::optional<CheckReport> report_;
  std::optional<ParameterDomain> domain_;
  std::optional<PointSummary> points_;
  std::vector<PassTime> times_;
};

} // namespace pipec
