// Memory: activations alive on each rank over its program, in units of one
// stage's activations for one micro-batch (of size 1, when the schedule declares
// `sizes`: a micro-batch of size k counts k), and in bytes when the cost model
// (the schedule's costs, --costs, --cost) gives `activation_bytes` (of which an
// I frees all but `activation_bytes_w`, the part its W still needs). A forward
// stores its activations; a full backward frees them; after a split backward
// they stay until the W (the weight gradient needs the inputs). In an overlap
// pair the forward allocates before the backward frees: both run at once.
// Recomputation (R): the forward of a recomputed (stage, micro-batch) counts its
// activation while it runs (the peak after it includes it) and frees it right
// after, keeping only the stage input, counted as 0 units (one boundary tensor
// against a whole stage's activations) and `input_bytes` bytes (default 0); its
// R stores the rest again, and the backward (or W) frees it all as usual.
// Memory ops, counted in program order as if each copy completed before the
// rank's next compute op (the simulator times them; `pipec sim` reports the
// timed peak beside this one): an Offload or Evict removes the activation from
// its owner after the op, a Reload or Load puts it back from the op on (the
// buffer is allocated when the copy starts), and on the partner a Hold counts it
// from the op on and a Return removes it after the op. Each moves the whole
// activation (all of activation_bytes: it runs before the backward).
// Parameter copies per rank: the chunks that hold a stage.
// Held messages per rank: activations and gradients received before their op
// because their channel's sender sent them ahead of one the rank needed first
// (comm/CommPlan.h). They are reported as their own figure and are not part of
// the activation budget: --max-activations bounds what the stages store
// between forward and backward, which the schedule's order decides, while
// held messages are transient receive buffers.
#include "check/CheckPasses.h"
#include "check/OpText.h"
#include "cost/CostModel.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace pipec {

namespace {

// Parameter chunks: distinct chunks holding a stage, over all flows. The slots
// are bucketed by rank and each rank's few chunks deduplicated by sorting, so
// the cost follows the slots placed, never ranks x highest chunk number.
void countParameterChunks(const ScheduleIR &ir, std::vector<RankMemory> &memory) {
  std::vector<size_t> begin(ir.ranks.size() + 1, 0);
  for (const Flow &flow : ir.flows)
    for (const Slot &slot : flow.stageSlots)
      ++begin[slot.rank + 1];
  for (size_t r = 0; r < ir.ranks.size(); ++r)
    begin[r + 1] += begin[r];
  std::vector<int32_t> chunks(begin.back());
  std::vector<size_t> cursor(begin.begin(), begin.end() - 1);
  for (const Flow &flow : ir.flows)
    for (const Slot &slot : flow.stageSlots)
      chunks[cursor[slot.rank]++] = slot.chunk;
  for (size_t r = 0; r < ir.ranks.size(); ++r) {
    auto first = chunks.begin() + begin[r], last = chunks.begin() + begin[r + 1];
    std::sort(first, last);
    memory[r].parameterChunks = std::unique(first, last) - first;
  }
}

} // namespace

int64_t activationDelta(OpKind kind) {
  switch (kind) {
  case OpKind::F:
  case OpKind::R:
  case OpKind::Reload:
  case OpKind::Load:
  case OpKind::Hold:
    return 1;
  case OpKind::B:
  case OpKind::W:
  case OpKind::Offload:
  case OpKind::Evict:
  case OpKind::Return:
    return -1;
  case OpKind::I:
    return 0;
  }
  return 0;
}

bool checkMemory(const ScheduleIR &ir, const CheckOptions &options, const CommPlan *comm,
                 DiagnosticEngine &diags, std::vector<RankMemory> &memory) {
  CostModel costs = CostModel::build(ir, options.costs);
  memory.assign(ir.ranks.size(), {});
  bool ok = true;
  bool sized = !ir.microbatchSizes.empty();
  for (size_t r = 0; r < ir.ranks.size(); ++r) {
    const std::vector<Op> &ops = ir.ranks[r].ops;
    RankMemory &m = memory[r];
    int64_t live = 0;
    double liveBytes = 0;
    bool overflowed = false;
    // (stage, micro-batch) pairs this rank recomputes: their forward keeps nothing.
    std::unordered_set<uint64_t> recomputed;
    auto keyOf = [](const Op &op) { return uint64_t(uint32_t(op.stage)) << 32 | uint32_t(op.microbatch); };
    for (const Op &op : ops)
      if (op.kind == OpKind::R)
        recomputed.insert(keyOf(op));
    for (uint32_t i = 0; i < ops.size(); ++i) {
      const Op &op = ops[i];
      int64_t delta = activationDelta(op.kind);
      if (sized) // a micro-batch of size k stores k units (`sizes`)
        delta *= ir.microbatchSizes[size_t(op.microbatch)];
      live += delta;
      // Bytes: F stores them all, B frees them all; a split backward frees at the
      // I what its W does not need (activation_bytes_w stays until the W).
      double bytes = costs.activationBytes(op.stage);
      double size = sized ? double(ir.microbatchSizes[size_t(op.microbatch)]) : 1.0;
      if (op.kind == OpKind::I)
        liveBytes -= (bytes - costs.activationBytesUntilW(op.stage)) * size;
      else if (op.kind == OpKind::W)
        liveBytes -= costs.activationBytesUntilW(op.stage) * double(-delta);
      else if (op.kind == OpKind::R) // the stage input stayed since the forward
        liveBytes += double(delta) * (bytes - costs.inputBytes(op.stage));
      else
        liveBytes += double(delta) * bytes;
      if (!std::isfinite(liveBytes) && !overflowed) {
        overflowed = true;
        reportAtOp(diags, DiagKind::NonFiniteResult, ir, r, op,
                   "the activation bytes rank " + std::to_string(r) +
                       " holds here overflow a double; activation_bytes is too large");
        ok = false;
      }
      if (live > m.peakActivations) {
        m.peakActivations = live;
        m.peakOp = i;
      }
      m.peakBytes = std::max(m.peakBytes, liveBytes);
      if (op.kind == OpKind::F && !recomputed.empty() && recomputed.count(keyOf(op))) {
        live -= delta; // dropped after the forward; its R stores it again
        liveBytes -= double(delta) * (bytes - costs.inputBytes(op.stage));
      }
    }
    if (options.maxActivations >= 0 && m.peakActivations > options.maxActivations) {
      const Op &at = ops[m.peakOp];
      if (Diagnostic *d = reportAtOp(diags, DiagKind::ActivationBudgetExceeded, ir, r, at,
                                     "rank " + std::to_string(r) + " holds " +
                                         std::to_string(m.peakActivations) +
                                         " micro-batches' activations here, above the budget of " +
                                         std::to_string(options.maxActivations)))
        d->note("the budget comes from --max-activations; run fewer forwards ahead of "
                "backwards on this rank, or raise the budget");
      ok = false;
    }
  }
  countParameterChunks(ir, memory);
  if (comm)
    for (size_t r = 0; r < ir.ranks.size(); ++r) {
      const RankComm &rank = comm->ranks[r];
      memory[r].peakHeldMessages = rank.peakHeld;
      if (rank.peakHeld > 0)
        memory[r].peakHeldOp = rank.stepOp[rank.peakHeldStep];
    }
  return ok;
}

} // namespace pipec
