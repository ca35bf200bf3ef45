// The two-stream plan of an overlap pair (F & B of different micro-batches),
// shared by the simulator and the CUDA backend so both run the same schedule.
//
// Each chunk is a chain of sub-operations: the forward runs attention, dispatch,
// MLP, combine; the backward runs them in reverse (combine, MLP, dispatch,
// attention). Compute sub-operations (attention, MLP) go on the compute stream,
// communication (dispatch, combine) on the communication stream. The plan is a
// greedy list schedule: whenever a stream is free it starts the ready
// sub-operation that became ready first, the backward's on a tie, so one chunk's
// all-to-all hides under the other's compute (DeepSeek-V3, Figure 4).
#pragma once

#include "cost/SubOps.h"

#include <vector>

namespace pipec {

struct PlannedSubOp {
  SubOp op;
  bool forward;       // which half of the pair
  bool onCommStream;
  double start, end;  // relative to the pair's start
};

struct OverlapPlan {
  std::vector<PlannedSubOp> subOps; // in start order
  double makespan = 0;
};

// `forwardCosts`: the forward stage's forward sub-operation costs;
// `backwardCosts`: the backward stage's backward ones. CostModel.h's
// planOverlap plans a pair of stages of a cost model.
OverlapPlan planOverlap(const SubOpDurations &forwardCosts, const SubOpDurations &backwardCosts);

} // namespace pipec
