// `pipec check --explain`: a human-readable account of what the checks derived:
// placement per flow, gradient-sync groups of replicated stages, memory and
// communication per rank.
#pragma once

#include "check/Checks.h"
#include "elab/ScheduleIR.h"

#include "llvm/Support/raw_ostream.h"

namespace pipec {

void explainSchedule(const ScheduleIR &ir, const CheckReport &report, llvm::raw_ostream &out);

} // namespace pipec
