// `pipec emit --target torch-csv`: the schedule as PyTorch's compute-only CSV
// (torch.distributed.pipelining, PipelineScheduleMulti._dump_csv /
// _load_csv(format="compute_only")), so a schedule written here runs there.
//
// One row per rank, one cell per op: <stage><type><micro-batch> with global
// stage and micro-batch ids (0F0, 3I1, 3W1, 2B0), an overlap pair as
// (<forward>;<backward>)OVERLAP_F_B. Rows end in '\n'; PyTorch's idle slots
// (empty cells) are never written; an idle rank is a blank line, except an idle
// last rank, written "," (a blank line ending the file is refused on import). A pair keeps the order it was written in
// (`B & F` in the source, or (1B0;1F1) in an imported CSV, stays backward first).
//
// The format names global stage ids only, and PyTorch derives each stage's rank
// from the rows: a stage on two ranks (DualPipe's and Chimera's two flows) is
// refused when the file is loaded ("Stage 1 is assigned to both rank 2 and
// rank 1"). checkTorchCsvPlacement reports it before anything is written.
#pragma once

#include "diag/Diagnostics.h"
#include "elab/ScheduleIR.h"

#include "llvm/Support/raw_ostream.h"

namespace pipec {

// False (after reporting TorchCsvStageOnTwoRanks) when a stage is placed on two
// ranks, which the CSV cannot express.
bool checkTorchCsvPlacement(const ScheduleIR &ir, DiagnosticEngine &diags);

void writeTorchCsv(const ScheduleIR &ir, llvm::raw_ostream &out);

} // namespace pipec
