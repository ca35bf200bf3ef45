// `pipec emit --target torch-csv`: the schedule as PyTorch's compute-only CSV
// (torch.distributed.pipelining, PipelineScheduleMulti._dump_csv /
// _load_csv(format="compute_only")), so a schedule written here runs there.
//
// One row per rank, one cell per op: <stage><type><micro-batch> with global
// stage and micro-batch ids (0F0, 3I1, 3W1, 2B0), an overlap pair as
// (<forward>;<backward>)OVERLAP_F_B. Rows end in '\n'; PyTorch's idle slots
// (empty cells) are never written.
#pragma once

#include "elab/ScheduleIR.h"

#include "llvm/Support/raw_ostream.h"

namespace pipec {

void writeTorchCsv(const ScheduleIR &ir, llvm::raw_ostream &out);

} // namespace pipec
