// Which constructs each program target runs (codegen/RuntimeSupport.h).
#include "codegen/RuntimeSupport.h"

namespace pipec {

namespace {

// The first op of the schedule, in rank order, that `wanted` accepts; false if none.
template <typename Pred>
bool firstOp(const ScheduleIR &ir, Pred wanted, size_t &rank, const Op *&op) {
  for (rank = 0; rank < ir.ranks.size(); ++rank)
    for (const Op &candidate : ir.ranks[rank].ops)
      if (wanted(candidate.kind)) {
        op = &candidate;
        return true;
      }
  return false;
}

// How the diagnostics name the target.
const char *targetName(RuntimeTarget target) {
  switch (target) {
  case RuntimeTarget::CpuProgram: return "a CPU program";
  case RuntimeTarget::CudaProgram: return "a CUDA program";
  case RuntimeTarget::JsonProgram: return "a JSON program";
  case RuntimeTarget::TorchCsv: return "a PyTorch CSV";
  }
  return "a program";
}

bool firstRecompute(const ScheduleIR &ir, size_t &rank, const Op *&op) {
  return firstOp(ir, [](OpKind kind) { return kind == OpKind::R; }, rank, op);
}

bool runsSizes(RuntimeTarget target) { return target != RuntimeTarget::TorchCsv; }
bool runsRecompute(RuntimeTarget target) { return target != RuntimeTarget::TorchCsv; }
// The JSON program writes memory ops as they are (for runtimes that read
// them); CPU and CUDA programs run them all (Offload/Reload and BPipe's
// transfers; a CUDA program refuses the transfers when it starts only with
// --ep > 1, runtime/cuda/src/CudaRun.cpp).
bool runsMemoryOp(RuntimeTarget target, OpKind) { return target != RuntimeTarget::TorchCsv; }

} // namespace

bool checkRuntimeSupport(const ScheduleIR &ir, RuntimeTarget target, DiagnosticEngine &diags) {
  bool ok = true;
  const std::string what = targetName(target);
  if (!runsSizes(target) && !ir.microbatchSizes.empty() && ir.source && ir.source->sizes) {
    diags.report(DiagKind::RuntimeUnsupported, ir.source->sizes->range,
                 std::string("schedule '") + ir.name + "' declares micro-batch sizes, which " +
                     what + " cannot express: every micro-batch there has the same size")
        .note("'pipec check' and 'pipec sim' take the sizes into account, and CPU and CUDA "
              "programs ('--target cpu', '--target cuda') and the PyTorch runtime ('--target "
              "json') run them; remove 'sizes' to build this target with equal micro-batches");
    ok = false;
  }
  size_t rank = 0;
  const Op *op = nullptr;
  if (!runsRecompute(target) && firstRecompute(ir, rank, op)) {
    diags.report(DiagKind::RuntimeUnsupported, ir.originOf(*op).range,
                 std::string("schedule '") + ir.name + "' recomputes forwards (R), which " +
                     what + " cannot express: it has no action that replays a forward")
        .note("this R runs on rank " + std::to_string(rank) +
              "; pipec's CPU and CUDA programs and its PyTorch runtime ('--target json') "
              "run recomputation; remove the R ops to write this target (the forwards then "
              "keep their activations)");
    ok = false;
  }
  auto unsupported = [target](OpKind kind) {
    return ast::isMemoryOp(kind) && !runsMemoryOp(target, kind);
  };
  if (firstOp(ir, unsupported, rank, op)) {
    diags.report(DiagKind::RuntimeUnsupported, ir.originOf(*op).range,
                 std::string("schedule '") + ir.name + "' moves activations (" +
                     ast::opKindName(op->kind) + "), which " + what + " cannot express: " +
                     "it keeps every activation on its device from F to B")
        .note("this op runs on rank " + std::to_string(rank) +
              "; 'pipec check' and 'pipec sim' model Offload/Reload and Evict/Hold/Return/Load, "
              "CPU programs ('--target cpu'), CUDA programs ('--target cuda') and the PyTorch "
              "runtime ('--target json') run them all; remove them to build this target");
    ok = false;
  }
  return ok;
}

} // namespace pipec
