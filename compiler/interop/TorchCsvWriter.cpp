#include "interop/TorchCsvWriter.h"

#include <string>
#include <vector>

namespace pipec {

bool checkTorchCsvPlacement(const ScheduleIR &ir, DiagnosticEngine &diags) {
  // The first stage a later flow puts on another rank than the first flow does
  // is the error; the others are counted in a note (flows x stages: both are
  // declared, so this stays small).
  int64_t others = 0;
  Diagnostic *d = nullptr;
  for (int64_t s = 0; s < ir.numStages; ++s) {
    for (size_t f = 1; f < ir.flows.size(); ++f) {
      const Slot &first = ir.flows[0].stageSlots[s], &other = ir.flows[f].stageSlots[s];
      if (other.rank == first.rank)
        continue;
      if (d) {
        ++others;
        break;
      }
      const ast::Placement *at = ir.flows[f].placement;
      d = &diags.report(
          DiagKind::TorchCsvStageOnTwoRanks, at ? at->range : llvm::SMRange(),
          "stage " + std::to_string(s) + " is placed on rank " + std::to_string(first.rank) +
              " and on rank " + std::to_string(other.rank) +
              ", which PyTorch's CSV format cannot express");
      if (ir.flows[0].placement)
        d->note(ir.flows[0].placement->range,
               "stage " + std::to_string(s) + " is on rank " + std::to_string(first.rank) +
                   " in flow '" + ir.flows[0].name + "'");
      d->note("the CSV names global stage ids only and PyTorch gives each stage one rank: "
             "loading this file fails with \"Stage " + std::to_string(s) +
             " is assigned to both rank " + std::to_string(other.rank) + " and rank " +
             std::to_string(first.rank) + "\"; schedules with two copies of a stage "
             "(DualPipe, Chimera) have no torch-csv form");
      break;
    }
  }
  if (others > 0)
    d->note(std::to_string(others) + " more stage" + (others == 1 ? " is" : "s are") +
            " placed on two ranks");
  return d == nullptr;
}

static void writeAction(const Op &op, llvm::raw_ostream &out) {
  out << op.stage << ast::opKindName(op.kind) << op.microbatch;
}

void writeTorchCsv(const ScheduleIR &ir, llvm::raw_ostream &out) {
  for (const RankOps &rank : ir.ranks) {
    const std::vector<Op> &ops = rank.ops;
    // An idle rank is a blank line, as PyTorch dumps it, except the last:
    // a blank line ending the file is refused on import (TorchCsvReader.h).
    if (ops.empty() && &rank == &ir.ranks.back())
      out << ',';
    for (size_t i = 0; i < ops.size(); ++i) {
      if (i)
        out << ',';
      if (ops[i].pair == PairRole::First && i + 1 < ops.size()) {
        // As written: forward first unless the source wrote the backward first.
        bool backwardFirst = ops[i].backwardWrittenFirst;
        out << '(';
        writeAction(ops[backwardFirst ? i + 1 : i], out);
        out << ';';
        writeAction(ops[backwardFirst ? i : i + 1], out);
        out << ")OVERLAP_F_B";
        ++i;
      } else {
        writeAction(ops[i], out);
      }
    }
    out << '\n';
  }
}

} // namespace pipec
