// `pipec emit --target ir`: every rank's elaborated ops on one line, in the
// notation of DeepSeek's reference traces: F0.3 = forward of chunk 0 on the 4th
// micro-batch of its flow; FB(F0.7|B1.3) = an overlap pair, forward first.
#pragma once

#include "elab/ScheduleIR.h"

#include "llvm/Support/raw_ostream.h"

namespace pipec {

void printIR(const ScheduleIR &ir, llvm::raw_ostream &out);

} // namespace pipec
