#include "elab/IRPrinter.h"

namespace pipec {

// A transfer op also shows its partner: `Evict0.3>2` sends to rank 2, `Hold0.3<0`
// receives from rank 0 (whose chunk 0 made the activation).
static void printOp(const ScheduleIR &ir, const RankOps &rank, size_t index,
                    llvm::raw_ostream &out) {
  const Op &op = rank.ops[index];
  out << ast::opKindName(op.kind) << op.chunk << '.' << ir.indexInFlow(op);
  if (ast::isTransferOp(op.kind))
    out << (ast::isTransferSend(op.kind) ? '>' : '<') << rank.peerOf(uint32_t(index));
}

void printIR(const ScheduleIR &ir, llvm::raw_ostream &out) {
  for (size_t r = 0; r < ir.ranks.size(); ++r) {
    out << "rank " << r << ':';
    const std::vector<Op> &ops = ir.ranks[r].ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      out << ' ';
      if (ops[i].pair == PairRole::First && i + 1 < ops.size()) {
        out << "FB(";
        printOp(ir, ir.ranks[r], i, out);
        out << '|';
        printOp(ir, ir.ranks[r], ++i, out);
        out << ')';
      } else {
        printOp(ir, ir.ranks[r], i, out);
      }
    }
    out << '\n';
  }
}

} // namespace pipec
