// Peak activations over time, for schedules with memory ops. The memory check
// counts in program order (check/Memory.cpp); with copy streams an Offload may
// still be running while later ops allocate, so `pipec sim` also reports the
// peak under its own times:
//   F and R store the activation from their start; a recomputed forward drops it
//   at its end; B and W free it at their end (I frees nothing, as in the check);
//   Offload, Evict and Return take it off the rank when they end (the copy or the
//   send completed); Reload, Load and Hold put it on the rank when they start
//   (their buffer is allocated when the copy or the receive begins).
// At equal times, frees come before allocations (a buffer freed at t is reusable
// at t). Units as the check's: a micro-batch of size k counts k.
#pragma once

#include "sim/Simulator.h"

#include <vector>

namespace pipec {

bool hasMemoryOps(const ScheduleIR &ir);

// Per rank, the most activations stored at once under `sim`'s times.
std::vector<int64_t> timedPeakActivations(const ScheduleIR &ir, const SimResult &sim);

} // namespace pipec
