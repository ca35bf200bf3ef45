// What the language can say that the runtimes cannot yet run.
//
// `sizes` (micro-batches of different sizes) are checked and simulated, but
// the CPU and CUDA runtimes and PyTorch's CSV format give every micro-batch the
// same size. Emitting a program (or a CSV) for such a schedule would run
// something other than what was checked, so it is refused by name instead.
// Recomputation (R) likewise: the runtimes have no replayed forward yet. Memory
// ops (Offload ... Load) too, except in the JSON export, which writes them for
// runtimes that read it.
#pragma once

#include "diag/Diagnostics.h"
#include "elab/ScheduleIR.h"

namespace pipec {

// Reports [RuntimeUnsupported] at the construct `what` ("a program", "a PyTorch
// CSV") cannot express. False if it reported.
// `memoryOpsExported`: the target writes memory ops (Offload ... Load) as they are
// (the JSON export), so they are not refused.
bool checkRuntimeSupport(const ScheduleIR &ir, const char *what, DiagnosticEngine &diags,
                         bool memoryOpsExported = false);

} // namespace pipec
