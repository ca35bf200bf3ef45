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
  return {};
}

} // namespace

CommPlan deriveCommPlan(const ScheduleIR &ir, const OpIndex &index) {
  constexpr uint32_t kNone = ~0u;
  CommPlan plan;
  size_t ranks = ir.ranks.size();
  plan.ranks.resize(ranks);

  // Steps. An op's step is found by walking its rank's ops with a step counter,
  // so no per-op table of steps is kept.
  for (size_t r = 0; r < ranks; ++r) {
    const std::vector<Op> &ops = ir.ranks[r].ops;
    plan.ranks[r].stepOp.reserve(std::count_if(
        ops.begin(), ops.end(), [](const Op &op) { return op.pair != PairRole::Second; }));
    for (uint32_t i = 0; i < ops.size(); ++i)
      if (ops[i].pair != PairRole::Second)
        plan.ranks[r].stepOp.push_back(i);
  }

  // Messages; for every op, the message it receives (at most one).
  // Flat over all ops (rank r's are from opBegin[r]): no per-rank vectors.
  std::vector<size_t> opBegin(ranks + 1, 0);
  for (size_t r = 0; r < ranks; ++r)
    opBegin[r + 1] = opBegin[r] + ir.ranks[r].ops.size();
  std::vector<uint32_t> received(opBegin.back(), kNone);
  // Exact sizes first: growing the largest arrays by doubling would cost up to 2x.
  size_t total = 0;
  for (size_t r = 0; r < ranks; ++r) {
    size_t sends = 0;
    for (const Op &op : ir.ranks[r].ops) {
      OpRef consumer = consumerOf(ir, index, op);
      sends += consumer.valid() && consumer.rank != static_cast<int32_t>(r);
    }
    total += sends;
  }
  plan.messages.reserve(total);
  // Channel ids of the current sender, by (receiver, kind); only touched slots are reset.
  std::vector<uint32_t> channelTo(2 * ranks, kNone);
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
      MessageKind kind = ops[i].kind == OpKind::F ? MessageKind::Activation
                                                  : MessageKind::Gradient;
      uint32_t &channel = channelTo[2 * consumer.rank + (kind == MessageKind::Gradient)];
      if (channel == kNone) {
        channel = plan.numChannels++;
        plan.channels.push_back({static_cast<int32_t>(r), consumer.rank});
        touched.push_back(2 * consumer.rank + (kind == MessageKind::Gradient));
      }
      uint32_t id = static_cast<uint32_t>(plan.messages.size());
      Message &m = plan.messages.emplace_back();
      m.kind = kind;
      m.channel = channel;
      m.producer = i;
      m.consumer = consumer.index;
      m.producerStep = step;
      m.consumerStep = 0; // set below, walking the consumer's rank
      received[opBegin[consumer.rank] + consumer.index] = id;
    }
    plan.ranks[r].sends.last = static_cast<uint32_t>(plan.messages.size()); // program order
    for (uint32_t slot : touched)
      channelTo[slot] = kNone;
    touched.clear();
  }
  // Each channel's messages in send order: ids grow in the sender's program
  // order, so a counting sort by channel over ascending ids gives it (and within
  // a channel, "sent before m" is "smaller id than m").
  std::vector<uint32_t> posted(plan.numChannels + 1, 0); // per channel: next to post
  for (const Message &m : plan.messages)
    ++posted[m.channel + 1];
  for (uint32_t c = 0; c < plan.numChannels; ++c)
    posted[c + 1] += posted[c];
  std::vector<uint32_t> channelOrder(plan.messages.size());
  std::vector<uint32_t> channelEnd(posted.begin() + 1, posted.end());
  {
    std::vector<uint32_t> cursor(posted.begin(), posted.end() - 1);
    for (uint32_t id = 0; id < plan.messages.size(); ++id)
      channelOrder[cursor[plan.messages[id].channel]++] = id;
  }
  // Posting order: before each step, on the channel of every message the step
  // consumes, each receive up to that message not yet posted. What is posted
  // and not yet consumed is held.
  for (size_t r = 0; r < ranks; ++r) {
    const std::vector<Op> &ops = ir.ranks[r].ops;
    RankComm &rank = plan.ranks[r];
    auto first = received.begin() + opBegin[r], last = received.begin() + opBegin[r + 1];
    rank.receives.reserve((last - first) - std::count(first, last, kNone));
    size_t consumed = 0;
    for (uint32_t step = 0; step < rank.stepOp.size(); ++step) {
      uint32_t end = step + 1 < rank.stepOp.size() ? rank.stepOp[step + 1]
                                                   : static_cast<uint32_t>(ops.size());
      for (uint32_t i = rank.stepOp[step]; i < end; ++i) {
        uint32_t id = received[opBegin[r] + i];
        if (id == kNone)
          continue;
        plan.messages[id].consumerStep = step;
        ++consumed;
        uint32_t channel = plan.messages[id].channel;
        uint32_t &next = posted[channel];
        while (next < channelEnd[channel] && channelOrder[next] <= id)
          rank.receives.push_back(channelOrder[next++]);
      }
      uint32_t held = static_cast<uint32_t>(rank.receives.size() - consumed);
      if (held > rank.peakHeld) {
        rank.peakHeld = held;
        rank.peakHeldStep = step;
      }
    }
  }
  return plan;
}

} // namespace pipec
