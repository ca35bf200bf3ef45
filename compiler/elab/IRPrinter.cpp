#include "elab/IRPrinter.h"

namespace pipec {

static void printOp(const ScheduleIR &ir, const Op &op, llvm::raw_ostream &out) {
  out << ast::opKindName(op.kind) << op.chunk << '.' << ir.indexInFlow(op);
}

void printIR(const ScheduleIR &ir, llvm::raw_ostream &out) {
  for (size_t r = 0; r < ir.ranks.size(); ++r) {
    out << "rank " << r << ':';
    const std::vector<Op> &ops = ir.ranks[r].ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      out << ' ';
      if (ops[i].pair == PairRole::First && i + 1 < ops.size()) {
        out << "FB(";
        printOp(ir, ops[i], out);
        out << '|';
        printOp(ir, ops[++i], out);
        out << ')';
      } else {
        printOp(ir, ops[i], out);
      }
    }
    out << '\n';
  }
}

} // namespace pipec
