// TorchLossOrder (interop/TorchLossOrder.h): both inputs are reduced to the
// last stage's forwards in the order they run, and one function decides.
#include "interop/TorchLossOrder.h"

#include <algorithm>
#include <string>
#include <vector>

namespace pipec {

namespace {

struct LastStageForward {
  int64_t microbatch;
  int64_t rank;
  llvm::SMRange at; // where the op was written (or its CSV cell)
};

bool warnIfOutOfOrder(const std::vector<LastStageForward> &forwards, int64_t lastStage,
                      DiagnosticEngine &diags) {
  for (size_t i = 0; i < forwards.size(); ++i) {
    const LastStageForward &f = forwards[i];
    if (f.microbatch == static_cast<int64_t>(i))
      continue;
    // Forward number i is not micro-batch i: the backward of micro-batch i
    // reads the loss of micro-batch f.microbatch, or none yet.
    Diagnostic &d = diags.warn(DiagKind::TorchLossOrder, f.at, lastStage, f.microbatch, i);
    d.note("on rank " + std::to_string(f.rank));
    d.note("in PyTorch the backward of micro-batch " + std::to_string(i) +
           " would back-propagate the loss of micro-batch " + std::to_string(f.microbatch) +
           " (_maybe_get_loss reads losses[" + std::to_string(i) +
           "]), or stop with \"Attempted to access loss\" if that forward has not run yet");
    d.note("run the last stage's forwards in micro-batch order for PyTorch's runtime; "
           "pipec's own runtimes (pipec.torch.Pipeline, pipec build) key each loss by "
           "micro-batch and run this order correctly");
    return false;
  }
  return true;
}

} // namespace

bool checkTorchLossOrder(const ScheduleIR &ir, DiagnosticEngine &diags) {
  int64_t lastStage = ir.numStages - 1;
  std::vector<LastStageForward> forwards;
  for (size_t r = 0; r < ir.ranks.size(); ++r)
    for (const Op &op : ir.ranks[r].ops)
      if (op.kind == OpKind::F && op.stage == lastStage)
        forwards.push_back({op.microbatch, static_cast<int64_t>(r), ir.originOf(op).range});
  return warnIfOutOfOrder(forwards, lastStage, diags);
}

bool checkTorchLossOrder(const TorchCsv &csv, DiagnosticEngine &diags) {
  int64_t lastStage = -1;
  for (const std::vector<TorchCell> &row : csv.rows)
    for (const TorchCell &cell : row)
      lastStage = std::max({lastStage, cell.first.stage, cell.second ? cell.second->stage : -1});
  std::vector<LastStageForward> forwards;
  for (size_t r = 0; r < csv.rows.size(); ++r)
    for (const TorchCell &cell : csv.rows[r])
      for (const TorchAction *a : {&cell.first, cell.second ? &*cell.second : nullptr})
        if (a && a->kind == ast::OpKind::F && a->stage == lastStage)
          forwards.push_back({a->microbatch, static_cast<int64_t>(r), a->range});
  return warnIfOutOfOrder(forwards, lastStage, diags);
}

} // namespace pipec
