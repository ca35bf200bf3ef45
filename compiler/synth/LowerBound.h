// A lower bound on the makespan of any schedule of a problem, whatever its
// orders: the critical path of one micro-batch; for each rank, its work after
// the earliest moment any of it can start and before the shortest tail that
// must follow it; and, from the budget, the time each micro-batch's
// activations must stay on a rank. Transfers count where stages change ranks
// (a message takes at least its transfer; queueing only adds). Linear in the
// stages (times the square of the op classes on a rank), not in the ops.
#pragma once

#include "synth/SynthProblem.h"

namespace pipec::synth {

double lowerBound(const SynthProblem &problem);

} // namespace pipec::synth
