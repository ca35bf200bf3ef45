// The communication model: which point-to-point messages a schedule implies and
// the order in which each rank posts them. It is the one definition shared by the
// deadlock check, the simulator and the code generators, so what is proved is
// what runs.
//
// Messages. After F(s, mb) on rank a, the activation goes to the rank holding
// stage s+1 for mb's flow; after B or I (s, mb), the input gradient goes to the
// rank holding stage s-1. No message when both stages share a rank.
//
// Posting order. A rank alternates communication groups and compute steps (one
// op, or one overlap pair):
//     group 0, step 0, group 1, step 1, ..., step n-1, group n
// Group k holds, in this order, the sends of step k-1's outputs and then the
// receives of step k's inputs. A group is posted as one NCCL group
// (ncclGroupStart/End) and waited for before the rank goes on. Between two ranks,
// the i-th send from a to b matches the i-th receive on b from a (NCCL's order).
// A send completes only when its receive is posted (no eager buffering assumed).
#pragma once

#include "elab/ScheduleIR.h"

#include <cstdint>
#include <vector>

namespace pipec {

enum class MessageKind : uint8_t { Activation, Gradient };

struct Message {
  MessageKind kind;
  int32_t from, to;   // ranks
  int32_t stage;      // the stage that produced it (activation: s -> s+1; gradient: s -> s-1)
  int32_t microbatch; // global id
  uint32_t producer;  // op index on `from` (the F, B or I)
  uint32_t consumer;  // op index on `to` (the F, B or I that needs it)
};

struct CommOp {
  uint32_t message;
  bool isSend;
};

struct RankComm {
  std::vector<CommOp> ops;          // every send and receive, in posting order
  std::vector<uint32_t> groupBegin; // group g is ops[groupBegin[g], groupBegin[g+1]); size = groups + 1
  std::vector<uint32_t> stepOp;     // step k's first op index in the rank's op list; size = steps
  size_t groupCount() const { return groupBegin.size() - 1; }
};

struct CommPlan {
  std::vector<Message> messages;
  std::vector<RankComm> ranks;
};

// Where an op of the schedule sits: which rank, which index in its op list.
struct OpRef {
  int32_t rank = -1;
  uint32_t index = 0;
  bool valid() const { return rank >= 0; }
};

// (stage, micro-batch) -> the op that runs its forward / backward (B or I) / W.
// Built by the coverage check; the communication model uses it to find consumers.
struct OpIndex {
  int64_t numStages = 0, numMicrobatches = 0;
  std::vector<OpRef> forward, backward, weight;
  size_t key(int64_t stage, int64_t microbatch) const {
    return static_cast<size_t>(stage * numMicrobatches + microbatch);
  }
};

// Derives messages and posting order. Requires a schedule whose coverage holds
// (every produced activation or gradient has exactly one consumer in `index`).
CommPlan deriveCommPlan(const ScheduleIR &ir, const OpIndex &index);

} // namespace pipec
