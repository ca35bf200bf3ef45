// The constructive heuristic: greedy list scheduling in simulated time, in the
// spirit of Zero Bubble's. Each step commits, over all ranks, the op that can
// start earliest; a rank chooses among the ops it could start within a small
// look-ahead window by a priority of kinds (a variant), so a W fills a bubble
// rather than delaying an arriving I or F. Memory is kept safe by admission: a
// micro-batch enters a rank only when the budget has room for all of its
// chunks there, so admitted micro-batches can always finish (no budget
// deadlock). Channels are consumed in the order they were sent.
#pragma once

#include "synth/SynthProblem.h"

#include <cstdint>
#include <optional>

namespace pipec::synth {

struct ListVariant {
  // Kind priority, best first: e.g. {kI, kF, kW}.
  int order[3] = {kI, kF, kW};
  double window = 0;     // look-ahead, in units of the rank's mean op time
  bool depthFirst = true; // among forwards: the later stage first (else the older micro-batch)
  uint64_t noise = 0;    // 0: deterministic ties; else a seed for random tie-breaking
  // Warm-up cap: rank r admits at most chunks * (P - r) + slack activations (as
  // 1F1B and ZB-H1 do with slack 0), never more than the budget; -1: the budget only.
  int slack = -1;
};

// The orders the heuristic builds, or nothing when it gets stuck (budget too small).
std::optional<RankOrders> listSchedule(const SynthProblem &problem, const ListVariant &variant);

} // namespace pipec::synth
