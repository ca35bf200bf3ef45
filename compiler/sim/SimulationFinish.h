// What the two event loops (Simulator.cpp's plain one, ContendedLoop.cpp's with
// shared links) have in common: the per-class durations they start from, and
// the end of a run (makespan, per-rank bubble, critical path), computed from the
// arrays both fill the same way. Internal to sim/.
#pragma once

#include "sim/Simulator.h"

namespace pipec {

constexpr uint32_t kNoMessage = ~0u; // "no input": SimResult::stepStart knows it too

// The duration of each step class under `costs`.
void classDurations(const SimulationPlan &plan, const CostModel &costs, std::vector<double> &out);
// The Evict / Load link times per stage (SimResult::Scratch::moveTransfer); empty
// without memory ops.
void moveTransfers(const SimulationPlan &plan, const CostModel &costs, std::vector<double> &out);

// Fills makespan, bubbles, utilisation and the critical path from stepEnd,
// messageArrived and the scratch's latestInput and next (steps that never ran).
void finishSimulation(const SimulationPlan &plan, SimResult &result);

// The time-ordered loop under a link model (ContendedLoop.cpp).
// `perturbation.links` is set.
void simulateContended(const SimulationPlan &plan, const CostModel &costs,
                       const SimPerturbation &perturbation, SimResult &result);

} // namespace pipec
