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
//
// The communication kernels run on SMs of their own: DeepSeek-V3 gives its
// all-to-all 20 of the H800's 132 SMs (report, Sec. 3.2.2), which the compute
// it overlaps does without. With a share s of the SMs held by communication, a
// compute sub-op runs at 1 - s of its speed while a communication sub-op runs
// (its matmuls and attention are spread over the SMs, so their throughput goes
// with the SMs they get) and at full speed otherwise; communication keeps its
// duration (link-bound).
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
// `backwardCosts`: the backward stage's backward ones; `commSmShare`: the
// share of the SMs communication holds while it runs, in [0, 1). CostModel.h's
// planOverlap plans a pair of stages of a cost model.
OverlapPlan planOverlap(const SubOpDurations &forwardCosts, const SubOpDurations &backwardCosts,
                        double commSmShare = 0);

} // namespace pipec
