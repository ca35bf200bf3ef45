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
//   - every (sender, receiver, kind) is a channel; the sender posts its sends in
//     its step order; the receiver posts receives in that same order: before
//     step k, for each message step k consumes, every receive on its channel up
//     to that message's place in the send sequence (found by searching the
//     sequence for the message) not yet posted. The i-th send matches the i-th
//     posted receive; a difference would be a mismatch (a bug in this model).
//   - a step runs once the previous step ran and every message it consumes
//     completed; message i of a channel completes once the step producing it
//     ran, its receive is posted (the receiver reached the step it is posted
//     before), and message i-1 of that channel completed.
//   - held: during step k, the messages posted before steps 0..k and consumed
//     by a later step.
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
#include <tuple>
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
  bool operator<(const BfMessage &o) const {
    return std::tie(gradient, stage, microbatch) < std::tie(o.gradient, o.stage, o.microbatch);
  }
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
  // Channels model: posted[k] = the receives posted just before step k, in
  // posting order (op and step name the consumer); peakHeld: the most held.
  std::vector<std::vector<BfCommOp>> posted;
  size_t peakHeld = 0;
  // Groups model: groups[k] = sends[k-1] + receives[k]; size = steps + 1.
  std::vector<std::vector<BfCommOp>> groups;
  // (The posted lists are filled by bruteForcePlan from every rank's sends.)
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
