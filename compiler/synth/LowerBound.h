// A lower bound on the makespan of any schedule of a problem, whatever its
// orders: the critical path of one micro-batch; for each rank, its work after
// the earliest moment any of it can start and before the shortest tail that
// must follow it; and, from the budget, the time each micro-batch's
// activations must stay on a rank and the few forwards a rank can run before
// its first backward. Transfers count where stages change ranks
// (a message takes at least its transfer; queueing only adds). Cheap: per
// rank, a pass over its few op classes (cubic in them, 3 per chunk) and at
// most one step per activation the budget allows.
#pragma once

#include "synth/SynthProblem.h"

namespace pipec::synth {

double lowerBound(const SynthProblem &problem);

} // namespace pipec::synth
