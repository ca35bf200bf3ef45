// A lower bound on the makespan of any schedule of a problem, whatever its
// orders and budget: for each rank, the forward path the first micro-batch
// needs to reach it, plus its own work, plus what must still run after its
// last backward; and, from the budget, the time each micro-batch's activations
// must stay on a rank. Transfers are left out (the bound stays valid, just weaker).
#pragma once

#include "synth/SynthProblem.h"

namespace pipec::synth {

double lowerBound(const SynthProblem &problem);

} // namespace pipec::synth
