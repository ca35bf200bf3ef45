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
  std::string text;             // what is wrong, without the stages
  const CostOverride *setting;  // the setting to point at; null: defaults only
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
      Diagnostic &d = diags.report(f.kind, at, describeStages(stages) + ": " + f.text);
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

  void add(DiagKind kind, std::string text, const CostOverride *setting, int64_t stage) {
    auto key = std::make_tuple(static_cast<int>(kind), text, setting);
    if (!findings_.count(key))
      findings_[key] = {kind, std::move(text), setting};
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

    if (!forwardSubOp != !backwardSubOp)
      add(DiagKind::SubOpCostsOneDirection,
          std::string(forwardSubOp ? "forward" : "backward") +
              " sub-operation costs are given but no " + (forwardSubOp ? "backward" : "forward") +
              " ones; an overlap pair would plan the " + (forwardSubOp ? "backward" : "forward") +
              " as taking no time",
          forwardSubOp ? forwardSubOp : backwardSubOp, s);

    auto sum = [](const SubOpDurations &d) { return d[0] + d[1] + d[2] + d[3]; };
    if (forwardSubOp && !same(sum(model_.subOps(s, true)), f))
      add(DiagKind::SubOpSumMismatch,
          "the forward sub-operation costs sum to " + show(sum(model_.subOps(s, true))) +
              ", but F is " + show(f) + "; a lone F and the forward of an overlap pair would "
              "take different times",
          decider("F", s) ? decider("F", s) : forwardSubOp, s);
    double backwardSum = sum(model_.subOps(s, false));
    if (backwardSubOp && !same(backwardSum, b) && !same(backwardSum, i))
      add(DiagKind::SubOpSumMismatch,
          "the backward sub-operation costs sum to " + show(backwardSum) + ", but B is " +
              show(b) + " and I is " + show(i) + "; a lone backward and the backward of an "
              "overlap pair would take different times",
          decider("B", s) ? decider("B", s) : backwardSubOp, s);

    if (const CostOverride *fb = decider("FB", s)) {
      double pair = fb->value;
      std::string longer = f > b ? "F = " + show(f) : "B = " + show(b);
      if (pair < std::max(f, b) && !same(pair, std::max(f, b)))
        add(DiagKind::PairCostOutOfRange,
            "FB = " + show(pair) + " is shorter than " + longer +
                "; an overlap pair cannot end before both of its ops",
            fb, s);
      else if (pair > f + b && !same(pair, f + b))
        add(DiagKind::PairCostOutOfRange,
            "FB = " + show(pair) + " is longer than F + B = " + show(f + b) +
                "; running the two ops one after the other would be faster",
            fb, s);
      if (model_.hasSubOps(s) && forwardSubOp && backwardSubOp) {
        double planned = planOverlap(model_, s, s).makespan;
        if (!same(planned, pair))
          add(DiagKind::PairCostMismatch,
              "FB = " + show(pair) + ", but the sub-operation costs plan a pair of " +
                  show(planned) + "; the simulator uses FB while a CUDA program runs the plan",
              fb, s);
      }
    }

    if (!same(i + w, b))
      add(DiagKind::SplitBackwardMismatch,
          "I + W = " + show(i) + " + " + show(w) + " = " + show(i + w) + ", but B is " + show(b) +
              "; a split backward should cost what a full one does",
          firstGiven({"I", "W", "B"}, s), s);
  }

  ResolvedCosts resolved_;
  CostModel model_;
  using Key = std::tuple<int, std::string, const CostOverride *>;
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
