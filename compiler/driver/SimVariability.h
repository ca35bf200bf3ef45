// `pipec sim` under real conditions, for one checked schedule: applies --slow
// and --topology to the deterministic run, samples --jitter, and measures each
// rank's sensitivity, into a VariabilityReport (sim/VariabilityReport.h).
#pragma once

#include "driver/Commands.h"
#include "sim/LinkModel.h"
#include "sim/VariabilityReport.h"

#include <optional>
#include <string>

namespace pipec {

// `result` is the plain simulation of `ir`; it becomes the run with stragglers and
// contention when either is given. `tail` (sim --model: the gradient reductions
// after the pipeline, seconds) is in every step time of `out`: under a topology as
// each rank's traffic on its NIC, sharing it with the pipeline's messages
// (SimPerturbation::rankTraffic); otherwise added after the pipeline. False with
// `error` when the settings do not fit the schedule (a --slow rank it lacks, a
// trace that cannot be read, too many samples to keep).
bool analyseVariability(const ScheduleIR &ir, const CheckReport &report, const CostModel &costs,
                        const SimArgs &sim, const std::optional<Topology> &topology,
                        double tail, SimResult &result, VariabilityReport &out,
                        std::string &error);

} // namespace pipec
