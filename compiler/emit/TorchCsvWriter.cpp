#include "emit/TorchCsvWriter.h"

namespace pipec {

static void writeAction(const Op &op, llvm::raw_ostream &out) {
  out << op.stage << ast::opKindName(op.kind) << op.microbatch;
}

void writeTorchCsv(const ScheduleIR &ir, llvm::raw_ostream &out) {
  for (const RankOps &rank : ir.ranks) {
    const std::vector<Op> &ops = rank.ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (i)
        out << ',';
      if (ops[i].pair == PairRole::First && i + 1 < ops.size()) {
        out << '(';
        writeAction(ops[i], out);
        out << ';';
        writeAction(ops[++i], out);
        out << ")OVERLAP_F_B";
      } else {
        writeAction(ops[i], out);
      }
    }
    out << '\n';
  }
}

} // namespace pipec
