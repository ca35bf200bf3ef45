// The TorchLossOrder warning: a schedule whose last stage runs its forwards out
// of micro-batch order trains wrongly in PyTorch's own pipelining runtime.
//
// torch.distributed.pipelining (2.x, through 2.15) appends each loss to a list
// as the last stage's forwards run (_PipelineSchedule._maybe_compute_loss) and
// reads entry mb back for the backward of micro-batch mb (_maybe_get_loss).
// The two agree only when forward number i is micro-batch i. Otherwise the
// backward of a micro-batch either finds no entry yet (PyTorch stops with
// "Attempted to access loss for microbatch") or back-propagates another
// micro-batch's loss: silently wrong gradients. PyTorch's validators accept
// such orders; pipec's checks do too, because its own runtimes key every loss
// by micro-batch. So `emit --target torch-csv` and `import --from torch-csv`
// warn, at the first forward out of order, whatever else the schedule does.
#pragma once

#include "diag/Diagnostics.h"
#include "elab/ScheduleIR.h"
#include "interop/TorchCsvReader.h"

namespace pipec {

// Warns (TorchLossOrder) for the IR that `emit --target torch-csv` writes;
// returns false when it warned. Expects one rank to hold the last stage
// (checkTorchCsvPlacement passed).
bool checkTorchLossOrder(const ScheduleIR &ir, DiagnosticEngine &diags);

// The same for a CSV that `import` read: the last stage is the highest stage
// id any action names.
bool checkTorchLossOrder(const TorchCsv &csv, DiagnosticEngine &diags);

} // namespace pipec
