// What the language can say that a runtime cannot yet run.
//
// Each target of a program runs part of what the checks and the simulator
// model. Recomputation (R) runs in the CPU and CUDA programs and in the
// PyTorch runtime (the JSON program); PyTorch's schedule CSV has no replay
// action. Per-micro-batch `sizes` run in the CPU program and the PyTorch
// runtime; the CUDA program's buffers and PyTorch's CSV give every
// micro-batch the same size. Emitting a target for a schedule it cannot run
// would run something other than what was checked, so it is refused by name.
// Memory ops (Offload ... Load) are checked and simulated and the JSON program
// exports them for runtimes that read it. The CPU program runs Offload and
// Reload (a host pool, on a copy stream); BPipe's transfers (Evict, Hold,
// Return, Load) run in no program yet, and the CUDA program and PyTorch's CSV
// move no activation: those targets refuse them by name.
#pragma once

#include "diag/Diagnostics.h"
#include "elab/ScheduleIR.h"

namespace pipec {

enum class RuntimeTarget { CpuProgram, CudaProgram, JsonProgram, TorchCsv };

// Reports [RuntimeUnsupported] for what `target` cannot express. False if it
// reported.
bool checkRuntimeSupport(const ScheduleIR &ir, RuntimeTarget target, DiagnosticEngine &diags);

} // namespace pipec
