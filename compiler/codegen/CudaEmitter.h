// `pipec emit --target cuda`: a checked schedule as a CUDA stream program. The
// file holds the same tables as the CPU program (codegen/ProgramTables.h) and
// each rank's stream commands (codegen/StreamLowering.h: compute, expert and
// per-channel streams, the events between them, overlap pairs interleaved by
// the simulator's two-stream plan), encoded together, and a main() that hands
// them to pipert::runEncodedCudaProgram. It is host C++: the kernels live in
// the CUDA runtime it links.
//
// The header comment records every input that changed the program beyond the
// schedule: the cost settings (the schedule's costs block, --costs, --cost),
// the default sub-operation split where it was used, and pipec's version. It
// counts each rank's commands, streams and events, and for small programs
// names each rank's streams; the built program's --dump-program prints the
// commands.
#pragma once

#include "check/Checks.h"
#include "codegen/StreamLowering.h"
#include "cost/CostModel.h"
#include "elab/ScheduleIR.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace pipec {

// Requires a schedule whose checks passed; `costs` decides the overlap plans.
void emitCudaProgram(const ScheduleIR &ir, const CheckReport &report, const StreamPlanCosts &costs,
                     const std::string &sourcePath, llvm::raw_ostream &out);

} // namespace pipec
