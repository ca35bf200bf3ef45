#include "frontend/DomainCheck.h"

#include "support/WorkerThreads.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>

namespace pipec {

PointStatus checkPoint(const ast::Schedule &schedule, const ElabOptions &elab,
                       const CheckOptions &checks, DiagnosticEngine &diags, uint64_t &ops) {
  ops = 0;
  if (std::optional<ScheduleIR> ir = elaborate(schedule, elab, diags)) {
    ops = ir->totalOps();
    runChecks(*ir, checks, diags);
  }
  if (!diags.hasErrors())
    return PointStatus::Ok;
  for (const Diagnostic &d : diags.diagnostics())
    if (d.severity == Severity::Error && d.kind != DiagKind::RequireFailed)
      return PointStatus::Failed;
  return diags.stopped() ? PointStatus::Failed : PointStatus::Unsupported;
}

namespace {

// A diagnostic to report, with the point it was found at; ordered by point,
// then by the order the point reported them.
struct Found {
  size_t point;
  size_t order;
  Diagnostic diagnostic;
};

class DomainRun {
public:
  DomainRun(Compilation &compilation, const ParameterDomain &domain, const ElabOptions &elab,
            const CheckOptions &checks, const DomainCheckOptions &options)
      : compilation_(compilation), domain_(domain), elab_(elab), checks_(checks),
        options_(options) {}

  PointSummary run() {
    size_t points = domain_.points.size();
    runOnThreads(clampThreads(options_.jobs, points), [this] { work(); });
    return report();
  }

private:
  void work() {
    for (;;) {
      if ((options_.failFast && failed_.load() > 0) || overBudget_.load())
        return;
      size_t i = next_++;
      if (i >= domain_.points.size())
        return;
      auto diags = std::make_unique<DiagnosticEngine>(compilation_.sources());
      diags->setErrorLimit(options_.errorLimit);
      diags->setWarningPolicy(compilation_.diags().warningPolicy()); // -W flags hold per point
      uint64_t ops = 0;
      PointStatus status =
          checkPoint(*compilation_.ast(), domain_.optionsAt(i, elab_), checks_, *diags, ops);
      if ((totalOps_ += ops) > elab_.limits.maxOps)
        overBudget_ = true;
      ++checked_;
      (status == PointStatus::Ok ? ok_ : status == PointStatus::Unsupported ? unsupported_
                                                                             : failed_)++;
      keep(i, status, std::move(diags));
    }
  }

  // Keeps what this point may contribute to the report.
  void keep(size_t i, PointStatus status, std::unique_ptr<DiagnosticEngine> diags) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t k = 0; k < diags->diagnostics().size(); ++k) {
      const Diagnostic &d = diags->diagnostics()[k];
      if (d.severity != Severity::Warning)
        continue;
      auto key = std::make_pair(unsigned(d.kind), d.range.Start.getPointer());
      auto [it, inserted] = warnings_.try_emplace(key, Found{i, k, d});
      if (!inserted && i < it->second.point)
        it->second = Found{i, k, d};
    }
    auto &smallest = status == PointStatus::Failed ? firstFailed_ : firstUnsupported_;
    auto &at = status == PointStatus::Failed ? firstFailedAt_ : firstUnsupportedAt_;
    if (status != PointStatus::Ok && (!smallest || i < at)) {
      smallest = std::move(diags);
      at = i;
    }
  }

  PointSummary report() {
    PointSummary summary;
    summary.description = domain_.description();
    if (overBudget_) { // what was found so far depends on timing: report none of it
      summary.overBudget = true;
      summary.points = domain_.points.size();
      compilation_.diags()
          .report(DiagKind::OpLimitExceeded, domain_.axes.front().at,
                  "the " + std::to_string(summary.points) + " points of " +
                      summary.description + " elaborate more than " +
                      std::to_string(elab_.limits.maxOps) +
                      " ops together, above the limit of --max-ops")
          .note("narrow the domain with -D, or raise --max-ops (it bounds the points of a "
                "domain together)");
      summary.params.resize(compilation_.diags().diagnostics().size());
      return summary;
    }
    summary.points = domain_.points.size();
    summary.ok = ok_;
    summary.unsupported = unsupported_;
    summary.failed = failed_;
    summary.unchecked = summary.points - checked_;

    // Errors of one point: the smallest failing one, else (nothing passed) the
    // smallest unsupported one, whose failed requires are then errors.
    std::vector<Found> found;
    const DiagnosticEngine *errors = firstFailed_ ? firstFailed_.get()
                                     : ok_ == 0   ? firstUnsupported_.get()
                                                  : nullptr;
    size_t errorsAt = firstFailed_ ? firstFailedAt_ : firstUnsupportedAt_;
    if (firstFailed_)
      summary.failingPoint = domain_.describe(firstFailedAt_);
    if (errors)
      for (size_t k = 0; k < errors->diagnostics().size(); ++k)
        if (errors->diagnostics()[k].severity != Severity::Warning &&
            errors->diagnostics()[k].kind != DiagKind::TooManyErrors)
          found.push_back({errorsAt, k, errors->diagnostics()[k]});
    for (auto &entry : warnings_)
      found.push_back(std::move(entry.second));
    std::sort(found.begin(), found.end(), [](const Found &a, const Found &b) {
      return std::tie(a.point, a.order) < std::tie(b.point, b.order);
    });

    DiagnosticEngine &diags = compilation_.diags();
    summary.params.resize(diags.diagnostics().size());
    for (Found &f : found) {
      size_t before = diags.diagnostics().size();
      Diagnostic &d = diags.report(f.diagnostic.kind, f.diagnostic.range, f.diagnostic.message);
      d.notes = std::move(f.diagnostic.notes);
      d.fixits = std::move(f.diagnostic.fixits);
      d.repeats = f.diagnostic.repeats;
      d.note("at " + domain_.describe(f.point));
      summary.params.resize(before);
      for (size_t k = before; k < diags.diagnostics().size(); ++k)
        summary.params.push_back(k + 1 == diags.diagnostics().size() ? domain_.valuesAt(f.point)
                                                                      : ParamValues{});
    }
    return summary;
  }

  Compilation &compilation_;
  const ParameterDomain &domain_;
  const ElabOptions &elab_;
  const CheckOptions &checks_;
  const DomainCheckOptions &options_;

  std::atomic<size_t> next_{0}, checked_{0}, ok_{0}, unsupported_{0}, failed_{0};
  std::atomic<uint64_t> totalOps_{0};
  std::atomic<bool> overBudget_{false};
  std::mutex mutex_; // guards what follows
  std::map<std::pair<unsigned, const char *>, Found> warnings_;
  std::unique_ptr<DiagnosticEngine> firstFailed_, firstUnsupported_;
  size_t firstFailedAt_ = 0, firstUnsupportedAt_ = 0;
};

} // namespace

PointSummary checkDomain(Compilation &compilation, const ParameterDomain &domain,
                         const ElabOptions &elab, const CheckOptions &checks,
                         const DomainCheckOptions &options) {
  return DomainRun(compilation, domain, elab, checks, options).run();
}

} // namespace pipec
