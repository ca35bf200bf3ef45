// Memory-op pairing: every activation that leaves device memory comes back before
// its backward, by the route it left on, and is moved one way only.
//   Offload(s, mb) and Reload(s, mb) come together (UnpairedMemoryOp otherwise).
//   A transfer is four ops: Evict on the owner (to = p), Hold on p (from = owner),
//   Return on p (to = owner), Load on the owner (from = p). All four or none, with
//   the same partner on both sides, so each message has exactly one receiver.
//   An activation is offloaded or evicted, not both, and neither when it is
//   recomputed (R): its forward then keeps nothing to move (ConflictingMemoryOps).
// The owner's ops run on the owner by construction (elaboration finds the stage on
// the rank's own chunk, and the partner's stage on the named owner's chunk), so
// what is left to check is presence and partner ranks. Order on each rank is the
// dependency check's; order across ranks is the deadlock check's.
#include "check/CheckPasses.h"
#include "check/OpText.h"

namespace pipec {

namespace {

class PairCheck {
public:
  PairCheck(const ScheduleIR &ir, const OpIndex &index, DiagnosticEngine &diags)
      : ir_(ir), index_(index), diags_(diags) {}

  bool run() {
    size_t cells = static_cast<size_t>(ir_.numStages * ir_.numMicrobatches);
    for (size_t key = 0; key < cells; ++key) {
      offloads(key);
      transfers(key);
    }
    return ok_;
  }

private:
  const Op &opAt(OpRef ref) const { return ir_.ranks[ref.rank].ops[ref.index]; }
  int32_t peerOf(OpRef ref) const { return ir_.ranks[ref.rank].peerOf(ref.index); }

  void error(DiagKind kind, OpRef at, const std::string &message, const std::string &hint) {
    ok_ = false;
    if (Diagnostic *d = reportAtOp(diags_, kind, ir_, at.rank, opAt(at), message))
      d->note(hint);
  }

  void offloads(size_t key) {
    OpRef offload = index_.move(OpKind::Offload, key);
    OpRef reload = index_.move(OpKind::Reload, key);
    OpRef evict = index_.move(OpKind::Evict, key);
    if (offload.valid() && !reload.valid())
      error(DiagKind::UnpairedMemoryOp, offload,
            describeOp(ir_, opAt(offload)) + " is never reloaded",
            "its backward needs the activation on the device: add a 'Reload' of the same chunk "
            "and micro-batch before it");
    if (reload.valid() && !offload.valid())
      error(DiagKind::UnpairedMemoryOp, reload,
            describeOp(ir_, opAt(reload)) + " reloads an activation that was never offloaded",
            "add an 'Offload' of the same chunk and micro-batch after its forward, or remove "
            "the Reload");
    OpRef moved = offload.valid() ? offload : evict;
    if (offload.valid() && evict.valid())
      error(DiagKind::ConflictingMemoryOps, evict,
            "the activation of stage " + std::to_string(opAt(evict).stage) + ", micro-batch " +
                std::to_string(opAt(evict).microbatch) +
                " is both offloaded to host memory and evicted to rank " +
                std::to_string(peerOf(evict)),
            "an activation leaves the device one way: keep the Offload/Reload or the "
            "Evict/Hold/Return/Load");
    if (moved.valid() && !index_.recompute.empty() && index_.recompute[key].valid())
      error(DiagKind::ConflictingMemoryOps, moved,
            describeOp(ir_, opAt(moved)) + " moves an activation that is also recomputed",
            "a recomputed forward keeps only its stage input, so there is nothing to move: "
            "recompute it or move it, not both");
  }

  void transfers(size_t key) {
    OpRef evict = index_.move(OpKind::Evict, key), hold = index_.move(OpKind::Hold, key);
    OpRef ret = index_.move(OpKind::Return, key), load = index_.move(OpKind::Load, key);
    if (!evict.valid() && !hold.valid() && !ret.valid() && !load.valid())
      return;
    // The owner and the partner, as the first op present states them.
    if (evict.valid() && !hold.valid()) {
      const Op &e = opAt(evict);
      error(DiagKind::UnpairedMemoryOp, evict,
            describeOp(ir_, e) + " sends the activation to rank " +
                std::to_string(peerOf(evict)) + ", which never holds it",
            "add 'Hold(" + std::to_string(e.chunk) + ", mb = " + std::to_string(e.microbatch) +
                ", from = " + std::to_string(evict.rank) + ")' to rank " +
                std::to_string(peerOf(evict)) + "'s program");
      return;
    }
    if (hold.valid() && !evict.valid()) {
      error(DiagKind::UnpairedMemoryOp, hold,
            describeOp(ir_, opAt(hold)) + " receives an activation that rank " +
                std::to_string(peerOf(hold)) + " never evicts",
            "add 'Evict' of the same chunk and micro-batch to rank " +
                std::to_string(peerOf(hold)) + "'s program");
      return;
    }
    if (evict.valid() && peerOf(evict) != hold.rank) {
      error(DiagKind::UnpairedMemoryOp, evict,
            describeOp(ir_, opAt(evict)) + " sends the activation to rank " +
                std::to_string(peerOf(evict)) + ", but rank " + std::to_string(hold.rank) +
                " is the one that holds it",
            "the Evict's 'to =' and the rank of its Hold must agree");
      return;
    }
    if (hold.valid() && !ret.valid()) {
      error(DiagKind::UnpairedMemoryOp, hold,
            describeOp(ir_, opAt(hold)) + " is never returned to rank " +
                std::to_string(peerOf(hold)),
            "add a 'Return' of the same chunk and micro-batch, 'to = " +
                std::to_string(peerOf(hold)) + "', after the Hold");
      return;
    }
    if (ret.valid() && !hold.valid()) {
      error(DiagKind::UnpairedMemoryOp, ret,
            describeOp(ir_, opAt(ret)) + " returns an activation that this rank never holds",
            "add a 'Hold' of the same chunk and micro-batch before it");
      return;
    }
    if (ret.rank != hold.rank) {
      error(DiagKind::UnpairedMemoryOp, ret,
            describeOp(ir_, opAt(ret)) + " runs on rank " + std::to_string(ret.rank) +
                ", but rank " + std::to_string(hold.rank) + " holds the activation",
            "the rank that holds an activation returns it");
      return;
    }
    if (ret.valid() && !load.valid()) {
      error(DiagKind::UnpairedMemoryOp, ret,
            describeOp(ir_, opAt(ret)) + " sends the activation back to rank " +
                std::to_string(peerOf(ret)) + ", which never loads it",
            "add a 'Load' of the same chunk and micro-batch, 'from = " +
                std::to_string(ret.rank) + "', before its backward");
      return;
    }
    if (load.valid() && !ret.valid()) {
      error(DiagKind::UnpairedMemoryOp, load,
            describeOp(ir_, opAt(load)) + " loads an activation that rank " +
                std::to_string(peerOf(load)) + " never returns",
            "an activation is loaded back from the rank it was evicted to");
      return;
    }
    if (peerOf(load) != ret.rank)
      error(DiagKind::UnpairedMemoryOp, load,
            describeOp(ir_, opAt(load)) + " loads from rank " + std::to_string(peerOf(load)) +
                ", but rank " + std::to_string(ret.rank) + " returns it",
            "the Load's 'from =' names the rank it evicted the activation to");
  }

  const ScheduleIR &ir_;
  const OpIndex &index_;
  DiagnosticEngine &diags_;
  bool ok_ = true;
};

} // namespace

bool checkMemoryOpPairs(const ScheduleIR &ir, const OpIndex &index, DiagnosticEngine &diags) {
  if (!index.hasMemoryOps())
    return true;
  return PairCheck(ir, index, diags).run();
}

} // namespace pipec
