// The communication model: which point-to-point messages a schedule implies and
// the order in which each rank posts them. It is the one definition shared by the
// deadlock check, the simulator and the code generators, so what is proved is
// what runs.
//
// Messages. After F(s, mb) on rank a, the activation goes to the rank holding
// stage s+1 for mb's flow; after B or I (s, mb), the input gradient goes to the
// rank holding stage s-1. No message when both stages share a rank.
// Activation transfers (BPipe) are messages too: an Evict sends (s, mb)'s stored
// activation to the partner's Hold, and the partner's Return sends it back to
// the owner's Load; each kind has channels of its own.
//
// Channels and streams. Each (sender, receiver, kind) is its own channel: its
// own NCCL communicator, with its own in-order stream on both ends. Activations
// and gradients between two ranks never share a channel, because bidirectional
// schedules (DualPipe, V shapes) send activations of one flow and gradients of
// the other between the same ranks in orders that differ on the two sides, and
// one shared stream would make each wait behind the other.
//   - A rank's compute stream runs its steps in program order (a step is one op
//     or an overlap pair) and starts a step once every message it needs arrived.
//   - On a channel the sender posts sends in the order its steps produce them
//     (a pair's forward first), each once its step is done.
//   - The receiver posts a channel's receives in the sender's order too, so the
//     i-th send always matches the i-th receive (NCCL's rule) and no order of the
//     consumer's ops can make NCCL deliver the wrong tensor. Before each step it
//     posts, on every channel the step reads from, all receives up to and
//     including the one the step needs that are not posted yet; it never posts
//     a receive later than the step that needs it. A message consumed later than
//     one sent after it is then received early and held (buffered) on the
//     receiving rank until its op runs: PyTorch's pipelining runtime does the
//     same, posting each receive when the sender's order reaches it.
//   - A send completes only together with its receive (rendezvous: no eager
//     buffering assumed), but sends and receives run on the channel's own
//     stream, so neither holds up compute; a step waits only for its inputs.
// Deadlock freedom under these rules (check/Deadlock.cpp): when a rank waits
// before step k for message m on channel c, every receive of c up to m is
// posted, so m arrives exactly when the sender has run the steps producing m
// and every message before it on c. Receives posted earlier than that (the
// posting point above is the latest allowed) change only how long messages are
// held, never whether the schedule finishes.
//
// Held messages. A message posted before step k and consumed after it is held
// during step k; RankComm::peakHeld counts the most a rank holds at once (the
// memory check reports it apart from stored activations).
#pragma once

#include "elab/ScheduleIR.h"
#include "pipert/Program.h"

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

namespace pipec {

// Evicted: Evict -> Hold (owner to partner); Returned: Return -> Load (partner to owner).
enum class MessageKind : uint8_t { Activation, Gradient, Evicted, Returned };
constexpr int kNumMessageKinds = 4;

struct Message {
  MessageKind kind : 2;
  uint32_t channel : 30; // dense channel id, CommPlan::numChannels of them (shares kind's word)
  // The ranks: CommPlan::from / to, read from the channel.
  uint32_t producer;     // op index on `from` (the F, B, I, Evict or Return): its stage and micro-batch are
                         // the message's (see producerOp)
  uint32_t consumer;     // op index on `to` (the F, B, I, Hold or Load that needs it)
  uint32_t producerStep; // step index on `from`
  uint32_t consumerStep; // step index on `to`
};
static_assert(sizeof(Message) == 20, "one message per op: keep it compact");
static_assert(int(MessageKind::Activation) == pipert::kActivationMessage &&
                  int(MessageKind::Gradient) == pipert::kGradientMessage &&
                  int(MessageKind::Evicted) == pipert::kEvictedMessage &&
                  int(MessageKind::Returned) == pipert::kReturnedMessage,
              "the comm plan's message kinds are the program's");

// A channel's two ranks.
struct ChannelEnds {
  int32_t from, to;
};

// Consecutive message ids [first, last): a rank's sends are its own messages in id
// order, so they need no stored list.
struct IdRange {
  struct iterator {
    using iterator_category = std::forward_iterator_tag;
    using value_type = uint32_t;
    using difference_type = std::ptrdiff_t;
    using pointer = const uint32_t *;
    using reference = uint32_t;
    uint32_t id;
    uint32_t operator*() const { return id; }
    iterator &operator++() { ++id; return *this; }
    difference_type operator-(iterator other) const { return difference_type(id) - other.id; }
    bool operator==(iterator other) const { return id == other.id; }
    bool operator!=(iterator other) const { return id != other.id; }
  };
  uint32_t first = 0, last = 0;
  size_t size() const { return last - first; }
  bool empty() const { return first == last; }
  uint32_t operator[](size_t i) const { return first + static_cast<uint32_t>(i); }
  iterator begin() const { return {first}; }
  iterator end() const { return {last}; }
};

struct RankComm {
  std::vector<uint32_t> stepOp;   // step k's first op index in the rank's op list
  IdRange sends;                  // message ids, in the order the rank posts them
  std::vector<uint32_t> receives; // message ids, in the order the rank posts them: on
                                  // each channel the sender's order (see above)
  uint32_t peakHeld = 0;          // most messages received before their step and held
  uint32_t peakHeldStep = 0;      // first step during which peakHeld are held
};

struct CommPlan {
  std::vector<Message> messages; // ids in posting order: rank 0's sends, then rank 1's...
  std::vector<RankComm> ranks;
  std::vector<ChannelEnds> channels; // by Message::channel
  uint32_t numChannels = 0;

  int32_t from(const Message &m) const { return channels[m.channel].from; }
  int32_t to(const Message &m) const { return channels[m.channel].to; }
  // The op that produced `m`. Its stage is the message's (activation: s -> s+1;
  // gradient: s -> s-1) and so is its micro-batch (global id).
  const Op &producerOp(const ScheduleIR &ir, const Message &m) const {
    return ir.ranks[from(m)].ops[m.producer];
  }
  // The channel a message travels on: (from, to, kind), each with its own order.
  // Message::channel numbers these keys densely, so passes index arrays by channel
  // instead of hashing the key. The runtimes' key: its kind bits are
  // MessageKind's values (static_asserted below).
  uint64_t channelKey(const Message &m) const {
    return pipert::channelKey(from(m), to(m), unsigned(m.kind));
  }
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
  // Recomputations (R); empty when the schedule has none, so it costs nothing then.
  std::vector<OpRef> recompute;
  // Memory ops (Offload ... Load, see ast::OpKind), a table per kind, each empty
  // when the schedule has none of that kind.
  std::vector<OpRef> memory[6];
  std::vector<OpRef> &moves(OpKind kind) { return memory[int(kind) - int(OpKind::Offload)]; }
  const std::vector<OpRef> &moves(OpKind kind) const {
    return memory[int(kind) - int(OpKind::Offload)];
  }
  bool hasMemoryOps() const {
    for (const std::vector<OpRef> &table : memory)
      if (!table.empty())
        return true;
    return false;
  }
  // The op of `kind` for (stage, micro-batch), invalid when there is none.
  OpRef move(OpKind kind, size_t key) const {
    const std::vector<OpRef> &table = moves(kind);
    return table.empty() ? OpRef{} : table[key];
  }
  size_t key(int64_t stage, int64_t microbatch) const {
    return static_cast<size_t>(stage * numMicrobatches + microbatch);
  }
};

// Derives messages and posting order. Requires a schedule whose coverage holds
// (every produced activation or gradient has exactly one consumer in `index`).
CommPlan deriveCommPlan(const ScheduleIR &ir, const OpIndex &index);

} // namespace pipec
