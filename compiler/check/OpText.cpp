#include "check/OpText.h"

namespace pipec {

const char *opKindWord(OpKind kind) {
  switch (kind) {
  case OpKind::F: return "forward";
  case OpKind::B: return "backward";
  case OpKind::I: return "input-gradient half";
  case OpKind::W: return "weight-gradient half";
  case OpKind::R: return "recomputation";
  case OpKind::Offload: return "offload";
  case OpKind::Reload: return "reload";
  case OpKind::Evict: return "eviction";
  case OpKind::Hold: return "hold";
  case OpKind::Return: return "return";
  case OpKind::Load: return "load";
  }
  return "op";
}

std::string opShortName(const ScheduleIR &ir, const Op &op) {
  return std::string(ast::opKindName(op.kind)) + std::to_string(op.chunk) + "." +
         std::to_string(ir.indexInFlow(op));
}

std::string describeOp(const ScheduleIR &ir, const Op &op) {
  return std::string("the ") + opKindWord(op.kind) + " of stage " + std::to_string(op.stage) +
         ", micro-batch " + std::to_string(op.microbatch) + " (" + opShortName(ir, op) + ")";
}

std::string whereOp(const ScheduleIR &ir, int64_t rank, const Op &op) {
  std::string where = "on rank " + std::to_string(rank);
  std::string iteration = ir.describeIteration(op.iteration);
  if (!iteration.empty())
    where += ", iteration " + iteration;
  return where;
}

void noteAtOp(Diagnostic &d, const ScheduleIR &ir, int64_t rank, const Op &op,
              const std::string &text) {
  d.note(ir.originOf(op).range, text + " " + whereOp(ir, rank, op));
}

Diagnostic *reportAtOp(DiagnosticEngine &diags, DiagKind kind, const ScheduleIR &ir, int64_t rank,
                       const Op &op, std::string message) {
  Diagnostic *d = diags.reportOnce(kind, ir.originOf(op).range, std::move(message));
  if (d)
    d->note("this op runs " + whereOp(ir, rank, op));
  return d;
}

} // namespace pipec
