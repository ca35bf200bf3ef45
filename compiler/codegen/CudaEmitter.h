// `pipec emit --target cuda`: a checked schedule as a CUDA stream program. The
// file holds the same tables as the CPU program (codegen/ProgramTables.h), then
// each rank's stream commands (codegen/StreamLowering.h: compute, expert and
// per-channel streams, the events between them, overlap pairs interleaved by
// the simulator's two-stream plan) and a main() that hands both to
// pipert::runCudaProgram. It is host C++: the kernels live in the CUDA runtime
// it links.
#pragma once

#include "check/Checks.h"
#include "cost/CostModel.h"
#include "elab/ScheduleIR.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace pipec {

// Requires a schedule whose checks passed; `costs` decides the overlap plans.
void emitCudaProgram(const ScheduleIR &ir, const CheckReport &report, const CostModel &costs,
                     const std::string &sourcePath, llvm::raw_ostream &out);

} // namespace pipec
