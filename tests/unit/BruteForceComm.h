// An independent, deliberately naive second implementation of the communication
// model of comm/CommPlan.h, used only by the property tests to cross-check the
// real message-order and deadlock analysis. It shares no code with compiler/comm
// or compiler/check: it reads the elaborated IR and derives everything itself.
//
// Messages (both models):
//   - F(s, mb) on rank a sends an activation to the rank b holding stage s+1 for
//     mb's flow (if s+1 < stages and b != a); F(s+1, mb) on b receives it.
//   - B or I (s, mb) on rank a sends a gradient to the rank b holding stage s-1
//     (if s > 0 and b != a); the B or I of (s-1, mb) on b receives it. W: nothing.
//   - A rank's ops form compute steps: one op, or an overlap pair (forward first).
//
// BfModel::Channels (CommPlan.h as of the deadlock check's implementation):
//   - every (sender, receiver, kind) is a channel; the i-th send on a channel (in
//     the sender's step order) matches the i-th receive on it (in the receiver's
//     step order); two different messages matched is a message-order mismatch.
//   - a step runs once the previous step ran and every message it receives
//     completed; message i of a channel completes once the step producing it ran
//     and message i-1 of that channel completed (the receive is posted then).
//   - deadlock: some step never runs (or some message never completes).
//
// BfModel::Groups (the earlier CommPlan.h design, kept for comparison):
//   - a rank posts group 0, step 0, group 1, ..., step n-1, group n; group k is
//     the sends of step k-1 then the receives of step k, posted at once and
//     waited for as a whole; the i-th send a->b matches the i-th receive on b
//     from a, whatever the kind; a send and its receive complete once both are
//     posted; deadlock: some rank never leaves some group.
#pragma once

#include "elab/ScheduleIR.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pipec::test {

enum class BfModel { Channels, Groups };

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
  uint32_t op = 0;   // index in the rank's op list of the op that sends / receives it
  uint32_t step = 0; // its step
};

struct BfRank {
  std::vector<uint32_t> stepOp;                // step k's first op index
  std::vector<std::vector<BfCommOp>> sends;    // per step, forward of a pair first
  std::vector<std::vector<BfCommOp>> receives; // per step, forward of a pair first
  // Groups model: groups[k] = sends[k-1] + receives[k]; size = steps + 1.
  std::vector<std::vector<BfCommOp>> groups;
};

struct BfPlan {
  std::vector<BfRank> ranks;
};

// Builds every rank's steps, sends and receives straight from the IR.
BfPlan bruteForcePlan(const ScheduleIR &ir);

struct BfVerdict {
  bool mismatch = false;       // some matched send/receive name different messages
  std::string mismatchDetail;  // the first one found, for humans
  bool deadlock = false;       // the naive simulation leaves something undone
  std::vector<size_t> stuckAt; // per rank: Channels, the first step that never runs;
                               // Groups, the group it is stuck in (== size: finished)
  std::string deadlockDetail;
};

// Mismatch: per channel (Channels) or ordered pair of ranks (Groups), the sends'
// sequence against the receives'. Deadlock: a naive round-by-round fixpoint. The
// simulation matches positionally (i-th with i-th) even when messages mismatch.
BfVerdict bruteForceCheck(const BfPlan &plan, BfModel model = BfModel::Channels);
inline BfVerdict bruteForceCheck(const ScheduleIR &ir, BfModel model = BfModel::Channels) {
  return bruteForceCheck(bruteForcePlan(ir), model);
}

} // namespace pipec::test
