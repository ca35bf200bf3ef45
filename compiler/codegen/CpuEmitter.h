// `pipec emit --target cpu`: a checked schedule as a C++ program for the CPU
// runtime. The program is the schedule's tables (<pipert/Program.h>: ops per
// rank, every message, each rank's send and receive posting order, the
// gradient-sync groups, the checker's predicted peaks), encoded
// (codegen/ProgramTables.h), and a main() that hands them to
// pipert::runEncodedProgram. The messages and posting orders are the ones the
// deadlock check proved, so what runs is what was proved.
//
// The output is golden-tested, so it is deterministic: no dates, no paths but
// the one the user gave.
#pragma once

#include "check/Checks.h"
#include "codegen/StreamLowering.h"
#include "elab/ScheduleIR.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace pipec {

// Requires a schedule whose checks passed (report.ok, report.comm set).
// `costs` decide the overlap plans. `sourcePath` is quoted in the header
// comment as given.
void emitCpuProgram(const ScheduleIR &ir, const CheckReport &report, const StreamPlanCosts &costs,
                    const std::string &sourcePath, llvm::raw_ostream &out);

} // namespace pipec
