// The exact mode of `pipec synth`: a branch-and-bound over per-rank orders that
// proves its result optimal under the simulator's rules (compiler/sim):
//   - a rank runs its ops one at a time, in its order; an op starts once the
//     rank is free and its inputs are there (F after F of the stage before; I
//     after its F and the I of the stage after; W after its I);
//   - a message crossing ranks leaves when its op ends, behind the previous
//     message of its (sender, receiver, kind) channel, and arrives a transfer
//     later; receives are posted in the sender's order (comm/CommPlan.h), so
//     the consumer may use its messages in any order;
//   - a rank holds at most `budget` activations (F adds one, W frees it);
//   - without split, every I is directly followed by its W (together a B).
// The search builds schedules in order of start time, so each set of orders
// is met once; see ExactSearch.cpp for the pruning rules and why they keep an
// optimum.
#pragma once

#include "synth/CandidateEvaluator.h"
#include "synth/SynthProblem.h"

#include <chrono>
#include <cstdint>

namespace pipec::synth {

struct ExactResult {
  RankOrders orders;            // the best schedule found (the start's if none better)
  double makespan = kInfeasible;
  double bound = 0;             // proven: no schedule is shorter
  bool optimal = false;         // the search finished: makespan == bound
  uint64_t nodes = 0;
};

// Searches for a schedule shorter than `start` (of makespan `startSpan` under
// the rules above; null and kInfeasible for none), until it proves the best
// optimal or `deadline` passes. `knownBound`: a lower bound already proven.
ExactResult solveExact(const SynthProblem &problem, const RankOrders *start, double startSpan,
                       double knownBound, std::chrono::steady_clock::time_point deadline);

} // namespace pipec::synth
