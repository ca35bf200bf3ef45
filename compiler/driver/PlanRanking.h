// `pipec plan --rank-by mean|p99 --jitter ...`: re-ranks the planner's fitting
// candidates by a statistic of their step time under per-op variability
// (sim/Variability.h), the planner's own step time being the deterministic one.
// Kept apart from the planner's search (plan/Planner.*): it runs after it, on the
// candidates it returns, recompiling each one's schedule at its parameters.
#pragma once

#include "driver/Commands.h"
#include "plan/Planner.h"

#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <string>
#include <vector>

namespace pipec {

// The most fitting candidates re-simulated under jitter: the planner's best by
// deterministic step time, the rest keep their order after them.
constexpr size_t kMaxJitteredCandidates = 32;

struct CandidateSpread {
  size_t candidate; // index into PlanResult::candidates, before re-ranking
  double mean = 0, p99 = 0; // step time (pipeline samples + the planner's tail), seconds
};

// Reorders `result`'s fitting candidates (at most kMaxJitteredCandidates, the best
// first) by `args.rankBy` under `args.jitter`, and makes the first the recommendation.
// Returns the spreads in the new order; false with `error` when a schedule no longer
// compiles. The plan's time budget holds here too: a candidate is re-simulated only
// while the time left exceeds what the previous one took (`*skipped` counts those
// left in their deterministic order after the ranked ones).
bool rankByVariability(const PlanArgs &args, const plan::PlanInputs &inputs,
                       plan::PlanResult &result, std::vector<CandidateSpread> &spreads,
                       std::string &error, std::chrono::steady_clock::time_point deadline,
                       size_t *skipped);

// "ranked by p99 step time under lognormal CV 0.1 (200 samples, seed 1)" and one
// line per re-ranked candidate.
void printSpreads(const PlanArgs &args, const plan::PlanResult &result,
                  const std::vector<CandidateSpread> &spreads, llvm::raw_ostream &out);

} // namespace pipec
