#include "cost/OverlapPlan.h"

#include <algorithm>

namespace pipec {

OverlapPlan planOverlap(const SubOpDurations &forwardCosts, const SubOpDurations &backwardCosts) {
  static const SubOp kForward[kSubOps] = {SubOp::Attention, SubOp::Dispatch, SubOp::Mlp,
                                          SubOp::Combine};
  static const SubOp kBackward[kSubOps] = {SubOp::Combine, SubOp::Mlp, SubOp::Dispatch,
                                           SubOp::Attention};
  auto isComm = [](SubOp op) { return op == SubOp::Dispatch || op == SubOp::Combine; };

  OverlapPlan plan;
  size_t next[2] = {0, 0};       // next sub-op of the forward [0] and backward [1] chain
  double chainReady[2] = {0, 0}; // when that next sub-op's predecessor finished
  double streamFree[2] = {0, 0}; // compute [0], communication [1]
  while (next[0] < kSubOps || next[1] < kSubOps) {
    // Candidates: each chain's next sub-op starts at max(chain ready, its stream free).
    int best = -1;
    double bestStart = 0;
    for (int backward : {1, 0}) {
      if (next[backward] >= kSubOps)
        continue;
      SubOp op = (backward ? kBackward : kForward)[next[backward]];
      double start = std::max(chainReady[backward], streamFree[isComm(op)]);
      if (best < 0 || start < bestStart || (start == bestStart && chainReady[backward] <
                                                                       chainReady[best])) {
        best = backward;
        bestStart = start;
      }
    }
    bool backward = best == 1;
    SubOp op = (backward ? kBackward : kForward)[next[best]];
    double end = bestStart + (backward ? backwardCosts : forwardCosts)[static_cast<int>(op)];
    plan.subOps.push_back({op, !backward, isComm(op), bestStart, end});
    streamFree[isComm(op)] = end;
    chainReady[best] = end;
    ++next[best];
    plan.makespan = std::max(plan.makespan, end);
  }
  return plan;
}

} // namespace pipec
