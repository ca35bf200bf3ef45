// Coverage: every (stage, micro-batch) gets exactly one forward and exactly one
// backward (a B, or an I whose W follows), and at most one recomputation (R)
// and one of each memory op (Offload ... Load). Builds the OpIndex later checks use.
// Ops cannot land on the wrong slot (elaboration derives the stage from the slot),
// so what remains is missing and duplicated work.
#include "check/CheckPasses.h"
#include "check/OpText.h"

#include <map>

namespace pipec {

namespace {

// Records `op` as the (stage, micro-batch)'s op in `table`; reports a duplicate.
bool record(const ScheduleIR &ir, DiagnosticEngine &diags, std::vector<OpRef> &table, size_t key,
            int32_t rank, uint32_t index) {
  OpRef &entry = table[key];
  const Op &op = ir.ranks[rank].ops[index];
  if (!entry.valid()) {
    entry = {rank, index};
    return true;
  }
  const Op &first = ir.ranks[entry.rank].ops[entry.index];
  std::string what = op.kind == OpKind::W   ? "weight-gradient half"
                     : op.kind == OpKind::F ? "forward"
                     : op.kind == OpKind::R ? "recomputation"
                     : isMemoryOp(op.kind)  ? opKindWord(op.kind)
                                            : "backward";
  if (Diagnostic *d = reportAtOp(diags, DiagKind::DuplicateOp, ir, rank, op,
                                 "the " + what + " of stage " + std::to_string(op.stage) +
                                     ", micro-batch " + std::to_string(op.microbatch) +
                                     " runs a second time"))
    noteAtOp(*d, ir, entry.rank, first, "it first ran here (" + opShortName(ir, first) + ")");
  return false;
}

// Missing ops, grouped per slot so a rank that forgets a whole loop gets one error.
struct Missing {
  std::vector<int64_t> microbatches;
  int32_t stage;
};

std::string listMicrobatches(const std::vector<int64_t> &mbs) {
  std::string text;
  for (size_t i = 0; i < mbs.size() && i < 8; ++i)
    text += (i ? ", " : "") + std::to_string(mbs[i]);
  if (mbs.size() > 8)
    text += " and " + std::to_string(mbs.size() - 8) + " more";
  return text;
}

void reportMissing(const ScheduleIR &ir, DiagnosticEngine &diags, DiagKind kind,
                   const std::map<std::pair<int32_t, int32_t>, Missing> &missing, const char *what) {
  for (const auto &[slot, gap] : missing) {
    auto [rank, chunk] = slot;
    const ast::RankProgram *program = ir.ranks[rank].program;
    std::string count = std::to_string(gap.microbatches.size());
    diags
        .report(kind, program->headRange,
                "rank " + std::to_string(rank) + " never runs the " + what + " of stage " +
                    std::to_string(gap.stage) + " (chunk " + std::to_string(chunk) +
                    ") for micro-batch" + (gap.microbatches.size() == 1 ? " " : "es ") +
                    listMicrobatches(gap.microbatches))
        .note("stage " + std::to_string(gap.stage) + " is placed on rank " +
              std::to_string(rank) + ", chunk " + std::to_string(chunk) + ", so its " + what +
              " belongs in this rank's program (" + count + " missing)");
  }
}

} // namespace

bool checkCoverage(const ScheduleIR &ir, DiagnosticEngine &diags, OpIndex &index) {
  index.numStages = ir.numStages;
  index.numMicrobatches = ir.numMicrobatches;
  size_t cells = static_cast<size_t>(ir.numStages * ir.numMicrobatches);
  index.forward.assign(cells, {});
  index.backward.assign(cells, {});
  index.weight.assign(cells, {});

  bool ok = true;
  // An I that runs again (DuplicateOp) needs a W of its own as well: with I, W,
  // I the second run's weight gradient is never computed, which is reported as
  // IWithoutW beside the DuplicateOp (both errors, at the second I).
  std::vector<uint32_t> inputRuns(cells, 0), weightRuns(cells, 0);
  std::vector<OpRef> repeatedInputs;
  for (size_t r = 0; r < ir.ranks.size(); ++r) {
    const std::vector<Op> &ops = ir.ranks[r].ops;
    for (uint32_t i = 0; i < ops.size(); ++i) {
      const Op &op = ops[i];
      size_t key = index.key(op.stage, op.microbatch);
      // One call of record (it stays inlined in this, the hottest loop of the check).
      std::vector<OpRef> *table = op.kind == OpKind::F   ? &index.forward
                                  : op.kind == OpKind::W ? &index.weight
                                  : op.kind < OpKind::R  ? &index.backward
                                                         : nullptr;
      if (!table) { // recomputations and memory ops: tables made on first use
        table = op.kind == OpKind::R ? &index.recompute : &index.moves(op.kind);
        if (table->empty())
          table->assign(cells, {});
      }
      bool first = record(ir, diags, *table, key, static_cast<int32_t>(r), i);
      ok &= first;
      if (op.kind == OpKind::I && inputRuns[key]++ > 0)
        repeatedInputs.push_back({static_cast<int32_t>(r), i});
      if (op.kind == OpKind::W)
        ++weightRuns[key];
    }
  }
  for (const OpRef &repeat : repeatedInputs) {
    const Op &i = ir.ranks[repeat.rank].ops[repeat.index];
    size_t key = index.key(i.stage, i.microbatch);
    if (inputRuns[key] <= weightRuns[key] || !index.weight[key].valid())
      continue; // as many W's as I's, or no W at all (reported below, at the first I)
    weightRuns[key] = inputRuns[key]; // once per (stage, micro-batch)
    if (Diagnostic *d = reportAtOp(diags, DiagKind::IWithoutW, ir, repeat.rank, i,
                                   "the weight-gradient half of this second run of " +
                                       describeOp(ir, i) + " never runs"))
      d->note("each I needs its own W; remove the repeated I, or add a 'W' after it");
    ok = false;
  }

  std::map<std::pair<int32_t, int32_t>, Missing> missingForward, missingBackward;
  for (const Flow &flow : ir.flows)
    for (int64_t s = 0; s < ir.numStages; ++s)
      for (int64_t mb = flow.begin; mb < flow.end; ++mb) {
        size_t key = index.key(s, mb);
        Slot slot = flow.stageSlots[s];
        auto noteMissing = [&](std::map<std::pair<int32_t, int32_t>, Missing> &table) {
          Missing &gap = table[{slot.rank, slot.chunk}];
          gap.stage = static_cast<int32_t>(s);
          gap.microbatches.push_back(mb);
        };
        if (!index.forward[key].valid())
          noteMissing(missingForward);
        if (!index.backward[key].valid())
          noteMissing(missingBackward);
        OpRef backward = index.backward[key];
        if (backward.valid() && !index.weight[key].valid()) {
          const Op &i = ir.ranks[backward.rank].ops[backward.index];
          if (i.kind == OpKind::I) {
            if (Diagnostic *d = reportAtOp(diags, DiagKind::IWithoutW, ir, backward.rank, i,
                                           "the weight-gradient half of " + describeOp(ir, i) +
                                               " never runs"))
              d->note("add a 'W' after this I (bare W completes the oldest deferred I)");
            ok = false;
          }
        }
      }
  reportMissing(ir, diags, DiagKind::MissingForward, missingForward, "forward");
  reportMissing(ir, diags, DiagKind::MissingBackward, missingBackward, "backward");
  return ok && missingForward.empty() && missingBackward.empty();
}

} // namespace pipec
