#include "comm/CommPlan.h"

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

  // Steps, and each op's step.
  std::vector<std::vector<uint32_t>> stepOf(ranks);
  for (size_t r = 0; r < ranks; ++r) {
    const std::vector<Op> &ops = ir.ranks[r].ops;
    stepOf[r].resize(ops.size());
    for (uint32_t i = 0; i < ops.size(); ++i) {
      if (ops[i].pair != PairRole::Second)
        plan.ranks[r].stepOp.push_back(i);
      stepOf[r][i] = static_cast<uint32_t>(plan.ranks[r].stepOp.size() - 1);
    }
  }

  // Messages; for every op, the message it receives (at most one).
  std::vector<std::vector<uint32_t>> received(ranks);
  for (size_t r = 0; r < ranks; ++r)
    received[r].assign(ir.ranks[r].ops.size(), kNone);
  for (size_t r = 0; r < ranks; ++r) {
    const std::vector<Op> &ops = ir.ranks[r].ops;
    for (uint32_t i = 0; i < ops.size(); ++i) {
      OpRef consumer = consumerOf(ir, index, ops[i]);
      if (!consumer.valid() || consumer.rank == static_cast<int32_t>(r))
        continue;
      uint32_t id = static_cast<uint32_t>(plan.messages.size());
      plan.messages.push_back({ops[i].kind == OpKind::F ? MessageKind::Activation
                                                        : MessageKind::Gradient,
                               static_cast<int32_t>(r), consumer.rank, ops[i].stage,
                               ops[i].microbatch, i, consumer.index, stepOf[r][i],
                               stepOf[consumer.rank][consumer.index]});
      plan.ranks[r].sends.push_back(id); // ops are visited in program order
      received[consumer.rank][consumer.index] = id;
    }
  }
  for (size_t r = 0; r < ranks; ++r)
    for (uint32_t id : received[r])
      if (id != kNone)
        plan.ranks[r].receives.push_back(id);
  return plan;
}

} // namespace pipec
