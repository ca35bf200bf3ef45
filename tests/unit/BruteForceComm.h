// An independent, deliberately naive second implementation of the communication
// model of comm/CommPlan.h, used only by the property tests to cross-check the
// real message-order and deadlock analysis. It shares no code with compiler/comm
// or compiler/check: it reads the elaborated IR and derives everything itself.
//
// The model, as implemented here:
//   - F(s, mb) on rank a sends an activation to the rank b holding stage s+1 for
//     mb's flow (if s+1 < stages and b != a); F(s+1, mb) on b receives it.
//   - B or I (s, mb) on rank a sends a gradient to the rank b holding stage s-1
//     (if s > 0 and b != a); the B or I of (s-1, mb) on b receives it. W: nothing.
//   - A rank's ops form compute steps (one op, or an overlap pair). It posts
//     group 0, step 0, group 1, ..., step n-1, group n, where group k is the sends
//     of step k-1 (op order, forward of a pair first) followed by the receives of
//     step k (same order). A group is posted at once and fully waited for.
//   - The i-th send a->b matches the i-th receive on b from a. A matched pair
//     naming two different logical messages is a message-order mismatch.
//   - A send/receive completes once both it and its match are posted; a rank
//     leaves a group when all of the group's ops completed. Deadlock: some rank
//     never leaves some group.
#pragma once

#include "elab/ScheduleIR.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pipec::test {

struct BfMessage {
  bool gradient = false; // false: activation
  int32_t stage = 0;     // the producing stage
  int32_t microbatch = 0;
  bool operator==(const BfMessage &o) const {
    return gradient == o.gradient && stage == o.stage && microbatch == o.microbatch;
  }
  bool operator!=(const BfMessage &o) const { return !(*this == o); }
  std::string str() const;
};

struct BfCommOp {
  bool isSend = false;
  int32_t peer = 0;
  BfMessage message;
};

struct BfRank {
  // groups[k]: every send and receive of group k, in posting order.
  std::vector<std::vector<BfCommOp>> groups;
};

struct BfPlan {
  std::vector<BfRank> ranks;
};

// Builds the per-rank posting sequence straight from the IR.
BfPlan bruteForcePlan(const ScheduleIR &ir);

struct BfVerdict {
  bool mismatch = false;       // some matched send/receive name different messages
  std::string mismatchDetail;  // the first one found, for humans
  bool deadlock = false;       // the naive simulation leaves some rank unfinished
  std::vector<size_t> stuckAt; // per rank: the group it is stuck in (== groups: finished)
  std::string deadlockDetail;
};

// Mismatch: per ordered pair of ranks, the sends' sequence against the receives'.
// Deadlock: a naive round-by-round fixpoint over the positions of all ranks. The
// simulation uses the positional (i-th with i-th) matching regardless of mismatch.
BfVerdict bruteForceCheck(const BfPlan &plan);
inline BfVerdict bruteForceCheck(const ScheduleIR &ir) { return bruteForceCheck(bruteForcePlan(ir)); }

} // namespace pipec::test
