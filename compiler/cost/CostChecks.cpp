#include "cost/CostChecks.h"

#include "cost/CostModel.h"
#include "cost/CostResolution.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace pipec {

namespace {

std::string show(double value) { return fmt::format("{}", value); }

// Equal up to rounding: sums of the same costs added in another order.
bool same(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)});
}

// "stage 2", "stages 0 to 3", "stages 0, 2 and 5".
std::string describeStages(const std::vector<int64_t> &stages) {
  if (stages.size() == 1)
    return "stage " + std::to_string(stages[0]);
  if (stages.back() - stages.front() + 1 == static_cast<int64_t>(stages.size()))
    return "stages " + std::to_string(stages.front()) + " to " + std::to_string(stages.back());
  std::string text = "stages ";
  for (size_t i = 0; i < stages.size(); ++i)
    text += (i == 0 ? "" : i + 1 == stages.size() ? " and " : ", ") + std::to_string(stages[i]);
  return text;
}

// One contradiction, found on one or more stages with the same values; reported
// once, at the setting that causes it.
struct Finding {
  DiagKind kind;
  std::vector<std::string> args; // the registry wording's {1}, {2}, ...; {0} is the stages
  const CostOverride *setting;   // the setting to point at; null: defaults only
};

class ContradictionFinder {
public:
  ContradictionFinder(const ScheduleIR &ir, const std::vector<CostOverride> &overrides)
      : resolved_(ir, overrides), model_(CostModel::build(ir, overrides)) {}

  void run(DiagnosticEngine &diags) {
    for (int64_t s = 0; s < resolved_.stages(); ++s)
      checkStage(s);
    for (auto &[key, stages] : found_) {
      const Finding &f = findings_[key];
      llvm::SMRange at = f.setting ? f.setting->range : llvm::SMRange();
      std::vector<std::string> args = {describeStages(stages)};
      args.insert(args.end(), f.args.begin(), f.args.end());
      Diagnostic &d = diags.report(f.kind, at, diagTextFrom(f.kind, args));
      if (f.setting && !f.setting->origin.empty())
        d.note("set by " + f.setting->origin);
    }
  }

private:
  const CostOverride *decider(const char *name, int64_t s) const {
    return resolved_.decider(name, s);
  }
  // The first of `names` given for the stage.
  const CostOverride *firstGiven(std::initializer_list<const char *> names, int64_t s) const {
    for (const char *name : names)
      if (const CostOverride *d = decider(name, s))
        return d;
    return nullptr;
  }

  // Stages with the same kind, arguments and setting are reported together.
  void add(DiagKind kind, std::vector<std::string> args, const CostOverride *setting,
           int64_t stage) {
    auto key = std::make_tuple(static_cast<int>(kind), args, setting);
    if (!findings_.count(key))
      findings_[key] = {kind, std::move(args), setting};
    found_[key].push_back(stage);
  }

  void checkStage(int64_t s) {
    static const std::initializer_list<const char *> kForward = {"attn_f", "dispatch_f", "mlp_f",
                                                                 "combine_f"};
    static const std::initializer_list<const char *> kBackward = {"attn_b", "dispatch_b",
                                                                  "mlp_b", "combine_b"};
    double f = model_.op(OpKind::F, s), b = model_.op(OpKind::B, s);
    double i = model_.op(OpKind::I, s), w = model_.op(OpKind::W, s);
    const CostOverride *forwardSubOp = firstGiven(kForward, s);
    const CostOverride *backwardSubOp = firstGiven(kBackward, s);

    if (!forwardSubOp != !backwardSubOp) {
      const char *given = forwardSubOp ? "forward" : "backward";
      const char *missing = forwardSubOp ? "backward" : "forward";
      add(DiagKind::SubOpCostsOneDirection, {given, missing},
          forwardSubOp ? forwardSubOp : backwardSubOp, s);
    }

    auto sum = [](const SubOpDurations &d) { return d[0] + d[1] + d[2] + d[3]; };
    if (forwardSubOp && !same(sum(model_.subOps(s, true)), f))
      add(DiagKind::SubOpSumMismatch,
          {"forward", show(sum(model_.subOps(s, true))), "F = " + show(f)},
          decider("F", s) ? decider("F", s) : forwardSubOp, s);
    double backwardSum = sum(model_.subOps(s, false));
    if (backwardSubOp && !same(backwardSum, b) && !same(backwardSum, i))
      add(DiagKind::SubOpSumMismatch,
          {"backward", show(backwardSum), "B = " + show(b) + " (or I = " + show(i) + ")"},
          decider("B", s) ? decider("B", s) : backwardSubOp, s);

    if (const CostOverride *fb = decider("FB", s)) {
      double pair = fb->value;
      bool shorter = pair < std::max(f, b) && !same(pair, std::max(f, b));
      bool longer = pair > f + b && !same(pair, f + b);
      if (shorter || longer)
        add(DiagKind::PairCostOutOfRange, {show(pair), show(std::max(f, b)), show(f + b)}, fb,
            s);
      if (model_.hasSubOps(s) && forwardSubOp && backwardSubOp) {
        double planned = planOverlap(model_, s, s).makespan;
        if (!same(planned, pair))
          add(DiagKind::PairCostMismatch, {show(pair), show(planned)}, fb, s);
      }
    }

    if (const CostOverride *share = decider("comm_sm_share", s))
      if (share->value >= 1)
        add(DiagKind::CommSmShareOutOfRange, {show(share->value)}, share, s);

    if (const CostOverride *kept = decider("activation_bytes_w", s)) {
      double all = model_.activationBytes(s), untilW = model_.activationBytesUntilW(s);
      if (untilW > all && !same(untilW, all))
        add(DiagKind::ActivationSplitAboveWhole, {show(untilW), show(all)}, kept, s);
    }

    if (!same(i + w, b))
      add(DiagKind::SplitBackwardMismatch, {show(i), show(w), show(i + w), show(b)},
          firstGiven({"I", "W", "B"}, s), s);
  }

  ResolvedCosts resolved_;
  CostModel model_;
  using Key = std::tuple<int, std::vector<std::string>, const CostOverride *>;
  std::map<Key, Finding> findings_;
  std::map<Key, std::vector<int64_t>> found_;
};

} // namespace

bool checkCosts(const ScheduleIR &ir, const std::vector<CostOverride> &overrides,
                DiagnosticEngine &diags) {
  bool ok = true;
  // The schedule's own settings were checked by the elaborator, located in the file.
  for (const CostOverride &c : overrides)
    if (c.stage >= ir.numStages) {
      diags.report(DiagKind::CostStageOutOfRange,
                   "cost '" + c.name + "' is given for stage " + std::to_string(c.stage) +
                       " by " + c.origin + ", but stages are 0 to " +
                       std::to_string(ir.numStages - 1));
      ok = false;
    }
  ContradictionFinder(ir, overrides).run(diags);
  return ok;
}

} // namespace pipec
