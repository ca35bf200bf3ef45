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

bool firstRecompute(const ScheduleIR &ir, size_t &rank, const Op *&op) {
  return firstOp(ir, [](OpKind kind) { return kind == OpKind::R; }, rank, op);
}

} // namespace

bool checkRuntimeSupport(const ScheduleIR &ir, const char *what, DiagnosticEngine &diags,
                         bool memoryOpsExported) {
  bool ok = true;
  if (!ir.microbatchSizes.empty() && ir.source && ir.source->sizes) {
    diags.report(DiagKind::RuntimeUnsupported, ir.source->sizes->range,
                 std::string("schedule '") + ir.name + "' declares micro-batch sizes, which " +
                     what + " cannot express: every micro-batch there has the same size")
        .note("'pipec check' and 'pipec sim' take the sizes into account; remove 'sizes' to "
              "build a program of equal micro-batches");
    ok = false;
  }
  size_t rank = 0;
  const Op *op = nullptr;
  if (firstRecompute(ir, rank, op)) {
    diags.report(DiagKind::RuntimeUnsupported, ir.originOf(*op).range,
                 std::string("schedule '") + ir.name + "' recomputes forwards (R), which " +
                     what + " cannot express: the runtimes keep every activation from F to B")
        .note("this R runs on rank " + std::to_string(rank) +
              "; 'pipec check' and 'pipec sim' model recomputation; remove the R ops to "
              "build a program (the forwards then keep their activations)");
    ok = false;
  }
  if (!memoryOpsExported && firstOp(ir, ast::isMemoryOp, rank, op)) {
    diags.report(DiagKind::RuntimeUnsupported, ir.originOf(*op).range,
                 std::string("schedule '") + ir.name + "' moves activations (" +
                     ast::opKindName(op->kind) + "), which " + what +
                     " cannot express: the runtimes keep every activation on its device from "
                     "F to B")
        .note("this op runs on rank " + std::to_string(rank) +
              "; 'pipec check' and 'pipec sim' model Offload/Reload and Evict/Hold/Return/Load, "
              "and 'pipec emit --target json' exports them; remove them to build a program");
    ok = false;
  }
  return ok;
}

} // namespace pipec
