// Event-driven simulation of a checked schedule under a cost model, using the
// communication model of comm/CommPlan.h (the one the checker proved): each rank
// runs its steps in order; a step starts when the rank is free and its inputs
// have arrived; a message leaves when its step ends, and travels after the
// previous message of its channel (latency + size / bandwidth).
#pragma once

#include "check/Checks.h"
#include "cost/CostModel.h"

#include <vector>

namespace pipec {

struct StepTiming {
  uint32_t op;         // first op of the step (a pair: its forward)
  double start, end;
};

struct MessageTiming {
  double sent, arrived;
};

struct RankTiming {
  std::vector<StepTiming> steps;
  double busy = 0;          // sum of step durations
  double bubble = 0;        // makespan - busy
  double utilization = 0;   // busy / makespan
};

// One link of the critical path: a step, and what made it start when it did.
struct CriticalLink {
  int32_t rank;
  uint32_t step;
};

struct SimResult {
  double makespan = 0;
  std::vector<RankTiming> ranks;
  std::vector<MessageTiming> messages; // indexed like CommPlan::messages
  std::vector<CriticalLink> criticalPath; // first step to last
  double totalBusy() const;
  double totalBubble() const;
};

// Requires a report whose checks passed (report.comm is set).
SimResult simulate(const ScheduleIR &ir, const CheckReport &report, const CostModel &costs);

} // namespace pipec
