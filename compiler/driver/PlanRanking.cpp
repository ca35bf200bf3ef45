// `pipec plan --rank-by`: the fitting candidates re-simulated under jitter and re-ranked (PlanRanking.h).
#include "driver/PlanRanking.h"

#include "frontend/Compilation.h"
#include "plan/CandidateJson.h"
#include "plan/StageCosts.h"
#include "sim/SimOutputs.h"
#include "sim/Variability.h"

#include <fmt/format.h>

#include <algorithm>

namespace pipec {

namespace {

bool spreadOf(const PlanArgs &args, const plan::PlanInputs &inputs, const plan::Candidate &c,
              CandidateSpread &spread, std::string &error) {
  ElabOptions elab;
  elab.defines = c.params;
  elab.limits = inputs.limits;
  Compilation compilation(c.schedule);
  if (!compilation.runAll(elab, CheckOptions{})) {
    error = "'" + c.schedule + "' no longer checks at the planned parameters";
    return false;
  }
  const ScheduleIR &ir = *compilation.ir();
  CostModel costs = CostModel::build(ir, plan::toCostOverrides(c.costs));
  auto simPlan = std::make_shared<const SimulationPlan>(
      buildSimulationPlan(ir, *compilation.report()->comm));
  std::vector<double> base = slowedDurations(*simPlan, costs, {});
  VariabilityResult v = runVariability(simPlan, costs, base, args.jitter, args.samples, args.seed,
                                       args.threads);
  spread.mean = v.stepTime.mean + c.tailSeconds;
  spread.p99 = v.stepTime.p99 + c.tailSeconds;
  return true;
}

// Every size that tells two candidates apart, also those `pipec plan`'s own
// table leaves out when the search did not vary them: the same P, M and v can
// come with another t, micro-batch size, recomputation or ZeRO stage, and
// without them two rows would read the same.
std::string rankedLayout(const plan::Candidate &c) {
  const plan::ParallelSizes &l = c.layout;
  std::string text = fmt::format("P={} M={} dp={} ep={}", l.pp, l.microbatches, l.dp, l.ep);
  if (l.v > 0)
    text += fmt::format(" v={}", l.v);
  text += fmt::format(" t={}", l.tp);
  if (l.cp > 1)
    text += fmt::format(" cp={}", l.cp);
  text += fmt::format(" b={} rc={} z={}", l.mbs, plan::recomputeName(c.training.recompute),
                      c.training.zeroStage);
  return text;
}

} // namespace

bool rankByVariability(const PlanArgs &args, const plan::PlanInputs &inputs,
                       plan::PlanResult &result, std::vector<CandidateSpread> &spreads,
                       std::string &error, std::chrono::steady_clock::time_point deadline,
                       size_t *skipped) {
  // Candidates come fitting first, by deterministic step time (Planner.h).
  size_t fitting = 0;
  while (fitting < result.candidates.size() && result.candidates[fitting].fits)
    ++fitting;
  size_t jittered = std::min(fitting, kMaxJitteredCandidates);
  spreads.clear();
  *skipped = 0;
  double lastSeconds = 0; // what the previous candidate took: the next is alike
  for (size_t i = 0; i < jittered; ++i) {
    auto began = std::chrono::steady_clock::now();
    if (began + std::chrono::duration<double>(lastSeconds) > deadline) {
      *skipped = jittered - i;
      jittered = i;
      break;
    }
    CandidateSpread spread{i};
    if (!spreadOf(args, inputs, result.candidates[i], spread, error))
      return false;
    spreads.push_back(spread);
    lastSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  }
  bool byP99 = args.rankBy == RankByStat::P99;
  std::stable_sort(spreads.begin(), spreads.end(), [&](const CandidateSpread &a,
                                                       const CandidateSpread &b) {
    return byP99 ? a.p99 < b.p99 : a.mean < b.mean;
  });
  std::vector<plan::Candidate> reordered;
  for (CandidateSpread &s : spreads) {
    reordered.push_back(result.candidates[s.candidate]);
    s.candidate = reordered.size() - 1;
  }
  std::copy(reordered.begin(), reordered.end(), result.candidates.begin());
  if (!spreads.empty())
    result.recommended = 0;
  return true;
}

void printSpreads(const PlanArgs &args, const plan::PlanResult &result,
                  const std::vector<CandidateSpread> &spreads, llvm::raw_ostream &out) {
  out << "\nranked by " << (args.rankBy == RankByStat::P99 ? "p99" : "mean")
      << " step time under " << args.jitter.describe() << " (" << args.samples
      << " samples, seed " << args.seed << "; the " << spreads.size()
      << " best fitting candidates by deterministic step time):\n";
  // The layout column as wide as its longest entry (a row names every size).
  size_t layoutWidth = 16;
  for (const CandidateSpread &spread : spreads)
    layoutWidth = std::max(layoutWidth, rankedLayout(result.candidates[spread.candidate]).size());
  std::string kRow = fmt::format("{{:<4}} {{:<22}} {{:<{}}} {{:>14}} {{:>12}} {{:>12}}\n", layoutWidth);
  out << fmt::format(fmt::runtime(kRow), "rank", "schedule", "layout", "deterministic", "mean", "p99");
  for (size_t i = 0; i < spreads.size(); ++i) {
    const plan::Candidate &c = result.candidates[spreads[i].candidate];
    out << fmt::format(fmt::runtime(kRow), i + 1, c.name, rankedLayout(c), formatNumber(c.stepTime) + " s",
                       formatNumber(spreads[i].mean) + " s", formatNumber(spreads[i].p99) + " s");
  }
}

} // namespace pipec
