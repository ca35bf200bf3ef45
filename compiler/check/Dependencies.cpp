// Dependencies on one rank: an op may not run before an op it needs when both are
// on the same rank (across ranks, the communication check proves the order).
//   F(s, mb) needs F(s-1, mb);  B/I(s, mb) needs F(s, mb) and B/I(s+1, mb);
//   W needs its I (guaranteed by elaboration).
//   R(s, mb) needs F(s, mb); B/I(s, mb) needs its R when one exists: the
//   recomputation rebuilds what the backward reads, so it sits between the two.
//   Offload(s, mb) needs F(s, mb), Reload needs its Offload, and B/I needs the
//   Reload; likewise Evict needs F, Load needs Evict and B/I needs Load on the
//   owner, and on the partner Return needs Hold (between ranks, Hold after Evict
//   and Load after Return are messages: the deadlock check proves them).
// An overlap pair's two ops run at once, so they must not depend on each other:
// every backward of a micro-batch depends on all of its forwards, so a pair is
// dependent exactly when both ops belong to the same micro-batch.
#include "check/CheckPasses.h"
#include "check/OpText.h"

namespace pipec {

namespace {

// Index of the other op of `i`'s overlap pair, or i itself.
uint32_t partnerOf(const std::vector<Op> &ops, uint32_t i) {
  if (ops[i].pair == PairRole::First)
    return i + 1;
  if (ops[i].pair == PairRole::Second)
    return i - 1;
  return i;
}

} // namespace

bool checkDependencies(const ScheduleIR &ir, const OpIndex &index, DiagnosticEngine &diags) {
  bool ok = true;
  bool hasMemoryOps = index.hasMemoryOps();
  for (size_t r = 0; r < ir.ranks.size(); ++r) {
    const std::vector<Op> &ops = ir.ranks[r].ops;
    for (uint32_t i = 0; i < ops.size(); ++i) {
      const Op &op = ops[i];
      if (op.pair == PairRole::First && ops[i + 1].microbatch == op.microbatch) {
        if (Diagnostic *d = reportAtOp(diags, DiagKind::OverlapDependent, ir, r, op,
                                       "an overlap pair cannot join " + describeOp(ir, op) +
                                           " with " + describeOp(ir, ops[i + 1])))
          d->note("the backward of a micro-batch needs all of its forwards: pair ops of "
                  "different micro-batches");
        ok = false;
      }
      auto requireBefore = [&](OpRef dep, const char *role) {
        if (!dep.valid() || dep.rank != static_cast<int32_t>(r) || dep.index < i ||
            dep.index == partnerOf(ops, i))
          return;
        const Op &needed = ops[dep.index];
        if (Diagnostic *d = reportAtOp(diags, DiagKind::DependencyOrder, ir, r, op,
                                       describeOp(ir, op) + " runs before " + role + ", " +
                                           describeOp(ir, needed)))
          noteAtOp(*d, ir, r, needed, opShortName(ir, needed) + " runs later, here,");
        ok = false;
      };
      switch (op.kind) {
      case OpKind::F:
        if (op.stage > 0)
          requireBefore(index.forward[index.key(op.stage - 1, op.microbatch)], "its input");
        break;
      case OpKind::B:
      case OpKind::I:
        requireBefore(index.forward[index.key(op.stage, op.microbatch)], "its own forward");
        if (!index.recompute.empty())
          requireBefore(index.recompute[index.key(op.stage, op.microbatch)], "its recomputation");
        if (op.stage + 1 < ir.numStages)
          requireBefore(index.backward[index.key(op.stage + 1, op.microbatch)],
                        "the backward that sends it its gradient");
        if (hasMemoryOps) {
          size_t key = index.key(op.stage, op.microbatch);
          requireBefore(index.move(OpKind::Reload, key), "the reload of its activation");
          requireBefore(index.move(OpKind::Load, key), "the load of its activation");
        }
        break;
      case OpKind::W:
        requireBefore(index.backward[index.key(op.stage, op.microbatch)], "its I");
        break;
      case OpKind::R:
        requireBefore(index.forward[index.key(op.stage, op.microbatch)], "the forward it replays");
        break;
      case OpKind::Offload:
      case OpKind::Evict:
        requireBefore(index.forward[index.key(op.stage, op.microbatch)],
                      "the forward that makes the activation");
        break;
      case OpKind::Reload:
        requireBefore(index.move(OpKind::Offload, index.key(op.stage, op.microbatch)),
                      "its offload");
        break;
      case OpKind::Load:
        requireBefore(index.move(OpKind::Evict, index.key(op.stage, op.microbatch)),
                      "its eviction");
        break;
      case OpKind::Return:
        requireBefore(index.move(OpKind::Hold, index.key(op.stage, op.microbatch)),
                      "its hold");
        break;
      case OpKind::Hold:
        break; // after the Evict on another rank: a message
      }
    }
  }
  return ok;
}

} // namespace pipec
