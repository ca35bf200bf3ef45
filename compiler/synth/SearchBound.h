// The lower bound synth reports, for every layout and with --overlap. One flow
// without pairs is LowerBound.h's bound itself. Several flows (bidirectional)
// count each rank's work over the flows that reach it. Pairs are bounded by a
// relaxation: each forward is shortened by the most any pair can save on it
// (F' = F - max(F + X - pair)), and where that is more than F, the backward's
// halves too, so a pair lasts at least F' + X'; running the two halves one
// after the other in the relaxed problem ends no later, so the relaxed
// problem's bound holds for the real one. Returns 0 (nothing proven) when the
// bound is not finite; synth then prints none.
#pragma once

#include "synth/SynthProblem.h"

namespace pipec::synth {

double searchBound(const SynthProblem &problem);

} // namespace pipec::synth
