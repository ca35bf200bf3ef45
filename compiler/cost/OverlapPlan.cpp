// The two-stream plan of an overlap pair (OverlapPlan.h): a greedy list
// schedule of the two chains' sub-operations, with compute slowed while a
// communication sub-operation holds part of the GPU's SMs.
#include "cost/OverlapPlan.h"

#include <algorithm>

namespace pipec {

namespace {

// The end of `work` seconds of compute (at the whole GPU's speed) started at
// `start`, running at `rate` of that speed until `slowUntil` and at full speed after.
double slowedEnd(double start, double work, double rate, double slowUntil) {
  double slowSpan = slowUntil - start;
  if (slowSpan <= 0)
    return start + work;
  if (work <= rate * slowSpan)
    return start + work / rate;
  return slowUntil + (work - rate * slowSpan);
}

} // namespace

OverlapPlan planOverlap(const SubOpDurations &forwardCosts, const SubOpDurations &backwardCosts,
                        double commSmShare) {
  static const SubOp kForward[kSubOps] = {SubOp::Attention, SubOp::Dispatch, SubOp::Mlp,
                                          SubOp::Combine};
  static const SubOp kBackward[kSubOps] = {SubOp::Combine, SubOp::Mlp, SubOp::Dispatch,
                                           SubOp::Attention};
  auto isComm = [](SubOp op) { return op == SubOp::Dispatch || op == SubOp::Combine; };
  // Compute's speed while a communication sub-op runs. At 0 the plan is the
  // plain greedy one (no arithmetic on the times, so results stay exact).
  const bool contended = commSmShare > 0;
  const double rate = 1 - commSmShare;

  OverlapPlan plan;
  size_t next[2] = {0, 0};       // next sub-op of the forward [0] and backward [1] chain
  double chainReady[2] = {0, 0}; // when that next sub-op's predecessor finished
  double streamFree[2] = {0, 0}; // compute [0], communication [1]
  // The last sub-op placed on each stream (index into plan.subOps), -1: none.
  // Sub-ops are placed in order of their starts (every candidate start only
  // grows), so a sub-op placed now starts no earlier than any placed before.
  long lastOnStream[2] = {-1, -1};
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
    bool comm = isComm(op);
    double cost = (backward ? backwardCosts : forwardCosts)[static_cast<int>(op)];
    double end = bestStart + cost;
    if (contended && !comm && lastOnStream[1] >= 0) {
      // A compute sub-op that starts while a communication one still runs
      // goes at `rate` until that one ends.
      end = slowedEnd(bestStart, cost, rate, plan.subOps[size_t(lastOnStream[1])].end);
    } else if (contended && comm && lastOnStream[0] >= 0) {
      // A communication sub-op that starts under a running compute one slows
      // its rest: every earlier communication sub-op ended by now, so that
      // compute has end - start seconds of full-speed work left.
      PlannedSubOp &running = plan.subOps[size_t(lastOnStream[0])];
      if (running.end > bestStart && cost > 0) {
        double left = running.end - bestStart;
        double slowedFor = std::min(cost, left / rate);
        running.end = bestStart + slowedFor + (left - rate * slowedFor);
        streamFree[0] = running.end;
        chainReady[running.forward ? 0 : 1] = running.end;
        plan.makespan = std::max(plan.makespan, running.end);
      }
    }
    plan.subOps.push_back({op, !backward, comm, bestStart, end});
    lastOnStream[comm] = long(plan.subOps.size()) - 1;
    streamFree[comm] = end;
    chainReady[best] = end;
    ++next[best];
    plan.makespan = std::max(plan.makespan, end);
  }
  return plan;
}

} // namespace pipec
