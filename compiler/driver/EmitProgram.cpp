#include "driver/EmitProgram.h"

#include "codegen/CpuEmitter.h"
#include "codegen/CudaEmitter.h"
#include "codegen/StreamLowering.h"

namespace pipec {

void emitProgram(const Compilation &compilation, BuildTarget target, const CommonArgs &args,
                 llvm::raw_ostream &out) {
  const ScheduleIR &ir = *compilation.ir();
  const CheckReport &report = *compilation.report();
  if (target == BuildTarget::Cuda)
    emitCudaProgram(ir, report, streamPlanCosts(ir, args.costs), compilation.path(), out);
  else // the same stream programs as CUDA's (no --cost on the CPU target: the default split)
    emitCpuProgram(ir, report, streamPlanCosts(ir, args.costs), compilation.path(), out);
}

} // namespace pipec
