// Improvement by local search on the per-rank orders: move one op (an I with
// its W when backwards are not split) to another place on its rank, or move a
// W right after its I (merge into a B) or later (split). Each candidate is
// scored by the CandidateEvaluator; infeasible ones (budget, channel order, deadlock)
// are dropped; an equal makespan is accepted so the search can cross plateaus.
#pragma once

#include "synth/CandidateEvaluator.h"
#include "synth/SynthProblem.h"

#include <chrono>
#include <functional>

namespace pipec::synth {

struct SearchStats {
  uint64_t tried = 0, feasible = 0, improved = 0;
  bool timedOut = false;
};

// Improves `orders` (feasible, of makespan `span`) in place; returns the new
// makespan. Stops early at `bound`: nothing can beat it.
double localSearch(const SynthProblem &problem, RankOrders &orders, double span, double bound,
                   std::chrono::steady_clock::time_point deadline, SearchStats &stats,
                   const std::function<void(double)> &progress);

} // namespace pipec::synth
