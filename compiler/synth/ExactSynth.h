// `pipec synth --exact`: the heuristic's schedule as a start, then the exact
// search (ExactSearch.h) over the same placement, costs and budget. The result
// is written and judged like the heuristic's (pipec check under the budget,
// then pipec sim), and its header says whether it is proven optimal or, when
// --time ran out first, the lower bound proven so far.
#pragma once

#include "synth/Synthesize.h"

namespace pipec::synth {

struct ExactOutcome {
  SynthOutcome synth;     // bound: the proven lower bound (== makespan when optimal)
  bool optimal = false;
  double heuristic = 0;   // the heuristic's makespan (pipec sim)
  double staticBound = 0; // lowerBound() of the problem
  uint64_t nodes = 0;
};

// `request.seconds` bounds both searches together; the heuristic gets a quarter.
ExactOutcome synthesizeExact(const SynthRequest &request,
                             const std::function<void(const std::string &)> &progress);

} // namespace pipec::synth
