#include "comm/CommPlan.h"

#include <algorithm>

namespace pipec {

namespace {

// The op that consumes what `op` produces (possibly on the same rank).
OpRef consumerOf(const ScheduleIR &ir, const OpIndex &index, const Op &op) {
  if (op.kind == OpKind::F && op.stage + 1 < ir.numStages)
    return index.forward[index.key(op.stage + 1, op.microbatch)];
  if ((op.kind == OpKind::B || op.kind == OpKind::I) && op.stage > 0)
    return index.backward[index.key(op.stage - 1, op.microbatch)];
  if (op.kind == OpKind::Evict)
    return index.move(OpKind::Hold, index.key(op.stage, op.microbatch));
  if (op.kind == OpKind::Return)
    return index.move(OpKind::Load, index.key(op.stage, op.microbatch));
  return {};
}

MessageKind messageKindOf(OpKind kind) {
  switch (kind) {
  case OpKind::F: return MessageKind::Activation;
  case OpKind::Evict: return MessageKind::Evicted;
  case OpKind::Return: return MessageKind::Returned;
  default: return MessageKind::Gradient;
  }
}

constexpr uint32_t kNone = ~0u;

// Phase 1, steps: a rank's steps are its ops, a pair counting once. An op's step
// is found by walking its rank's ops with a step counter, so no per-op table of
// steps is kept.
void numberSteps(const ScheduleIR &ir, CommPlan &plan) {
  for (size_t r = 0; r < ir.ranks.size(); ++r) {
    const std::vector<Op> &ops = ir.ranks[r].ops;
    plan.ranks[r].stepOp.reserve(std::count_if(
        ops.begin(), ops.end(), [](const Op &op) { return op.pair != PairRole::Second; }));
    for (uint32_t i = 0; i < ops.size(); ++i)
      if (ops[i].pair != PairRole::Second)
        plan.ranks[r].stepOp.push_back(i);
  }
}

// For every op, the message it receives (at most one), flat over all ops:
// rank r's are from opBegin[r] (no per-rank vectors).
struct ReceivedBy {
  std::vector<size_t> opBegin;
  std::vector<uint32_t> message; // kNone: the op receives nothing
};

// Phase 2, messages: one per op whose consumer is on another rank, in each
// sender's program order, each on the channel of its (sender, receiver, kind).
ReceivedBy collectMessages(const ScheduleIR &ir, const OpIndex &index, CommPlan &plan) {
  size_t ranks = ir.ranks.size();
  ReceivedBy received;
  received.opBegin.assign(ranks + 1, 0);
  for (size_t r = 0; r < ranks; ++r)
    received.opBegin[r + 1] = received.opBegin[r] + ir.ranks[r].ops.size();
  received.message.assign(received.opBegin.back(), kNone);
  // Exact sizes first: growing the largest arrays by doubling would cost up to 2x.
  size_t total = 0;
  for (size_t r = 0; r < ranks; ++r)
    for (const Op &op : ir.ranks[r].ops) {
      OpRef consumer = consumerOf(ir, index, op);
      total += consumer.valid() && consumer.rank != static_cast<int32_t>(r);
    }
  plan.messages.reserve(total);
  // Channel ids of the current sender, by (receiver, kind); only touched slots are reset.
  std::vector<uint32_t> channelTo(kNumMessageKinds * ranks, kNone);
  std::vector<uint32_t> touched;
  for (size_t r = 0; r < ranks; ++r) {
    const std::vector<Op> &ops = ir.ranks[r].ops;
    plan.ranks[r].sends.first = static_cast<uint32_t>(plan.messages.size());
    uint32_t step = 0;
    for (uint32_t i = 0; i < ops.size(); ++i) {
      if (i > 0 && ops[i].pair != PairRole::Second)
        ++step;
      OpRef consumer = consumerOf(ir, index, ops[i]);
      if (!consumer.valid() || consumer.rank == static_cast<int32_t>(r))
        continue;
      MessageKind kind = messageKindOf(ops[i].kind);
      uint32_t slot = kNumMessageKinds * consumer.rank + static_cast<uint32_t>(kind);
      uint32_t &channel = channelTo[slot];
      if (channel == kNone) {
        channel = plan.numChannels++;
        plan.channels.push_back({static_cast<int32_t>(r), consumer.rank});
        touched.push_back(slot);
      }
      uint32_t id = static_cast<uint32_t>(plan.messages.size());
      Message &m = plan.messages.emplace_back();
      m.kind = kind;
      m.channel = channel;
      m.producer = i;
      m.consumer = consumer.index;
      m.producerStep = step;
      m.consumerStep = 0; // set by planReceives, walking the consumer's rank
      received.message[received.opBegin[consumer.rank] + consumer.index] = id;
    }
    plan.ranks[r].sends.last = static_cast<uint32_t>(plan.messages.size()); // program order
    for (uint32_t slot : touched)
      channelTo[slot] = kNone;
    touched.clear();
  }
  return received;
}

// Each channel's messages in send order, as one array: channel c's are
// order[begin[c] .. end[c]).
struct ChannelQueues {
  std::vector<uint32_t> begin, end, order;
};

// Phase 3: message ids grow in the sender's program order, so a counting sort
// by channel over ascending ids gives each channel's send order (and within a
// channel, "sent before m" is "smaller id than m").
ChannelQueues orderByChannel(const CommPlan &plan) {
  ChannelQueues queues;
  std::vector<uint32_t> start(plan.numChannels + 1, 0);
  for (const Message &m : plan.messages)
    ++start[m.channel + 1];
  for (uint32_t c = 0; c < plan.numChannels; ++c)
    start[c + 1] += start[c];
  queues.order.resize(plan.messages.size());
  queues.begin.assign(start.begin(), start.end() - 1);
  queues.end.assign(start.begin() + 1, start.end());
  std::vector<uint32_t> cursor = queues.begin;
  for (uint32_t id = 0; id < plan.messages.size(); ++id)
    queues.order[cursor[plan.messages[id].channel]++] = id;
  return queues;
}

// Phase 4, posting order: before each step, on the channel of every message the
// step consumes, each receive up to that message not yet posted. What is posted
// and not yet consumed is held; the most held, and where, is kept per rank.
void planReceives(const ScheduleIR &ir, const ReceivedBy &received, ChannelQueues queues,
                  CommPlan &plan) {
  std::vector<uint32_t> &posted = queues.begin; // per channel: the next to post
  for (size_t r = 0; r < ir.ranks.size(); ++r) {
    const std::vector<Op> &ops = ir.ranks[r].ops;
    RankComm &rank = plan.ranks[r];
    auto first = received.message.begin() + received.opBegin[r];
    auto last = received.message.begin() + received.opBegin[r + 1];
    rank.receives.reserve((last - first) - std::count(first, last, kNone));
    size_t consumed = 0;
    for (uint32_t step = 0; step < rank.stepOp.size(); ++step) {
      uint32_t end = step + 1 < rank.stepOp.size() ? rank.stepOp[step + 1]
                                                   : static_cast<uint32_t>(ops.size());
      for (uint32_t i = rank.stepOp[step]; i < end; ++i) {
        uint32_t id = received.message[received.opBegin[r] + i];
        if (id == kNone)
          continue;
        plan.messages[id].consumerStep = step;
        ++consumed;
        uint32_t channel = plan.messages[id].channel;
        uint32_t &next = posted[channel];
        while (next < queues.end[channel] && queues.order[next] <= id)
          rank.receives.push_back(queues.order[next++]);
      }
      uint32_t held = static_cast<uint32_t>(rank.receives.size() - consumed);
      if (held > rank.peakHeld) {
        rank.peakHeld = held;
        rank.peakHeldStep = step;
      }
    }
  }
}

} // namespace

CommPlan deriveCommPlan(const ScheduleIR &ir, const OpIndex &index) {
  CommPlan plan;
  plan.ranks.resize(ir.ranks.size());
  numberSteps(ir, plan);
  ReceivedBy received = collectMessages(ir, index, plan);
  planReceives(ir, received, orderByChannel(plan), plan);
  return plan;
}

} // namespace pipec
