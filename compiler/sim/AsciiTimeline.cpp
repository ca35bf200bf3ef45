// `pipec sim --timeline`: ranks x time as text. Each step is drawn over the
// columns its time covers, labelled with its op when the label fits.
#include "sim/SimOutputs.h"

#include "check/OpText.h"

#include "llvm/Support/Format.h"

#include <cmath>

namespace pipec {

// Short labels: "F3" (chunk 0, micro-batch 3 of its flow); chunk 1 and above in
// lower case ("f3"); an overlap pair as "F3+b1". Copy-stream ops, on a row of
// their own: O(ffload), R(eload), E(vict), H(old), T (reTurn), L(oad).
static std::string shortLabel(const ScheduleIR &ir, const Op &op) {
  static const char kMemoryLetters[] = "OREHTL"; // Offload ... Load
  char letter = isMemoryOp(op.kind) ? kMemoryLetters[int(op.kind) - int(OpKind::Offload)]
                                    : ast::opKindName(op.kind)[0];
  if (op.chunk > 0)
    letter = static_cast<char>(letter - 'A' + 'a');
  return std::string(1, letter) + std::to_string(ir.indexInFlow(op));
}

bool printTimeline(const ScheduleIR &ir, const SimResult &sim, llvm::raw_ostream &out,
                   unsigned width) {
  if (!undrawableReason(sim).empty())
    return false;
  if (sim.makespan <= 0) {
    out << "(empty schedule)\n";
    return true;
  }
  // Whole columns per time unit when the schedule is short enough, so cells align.
  // (A makespan under one unit is stretched over the whole width instead.)
  double scale = sim.makespan < 1              ? width / sim.makespan
                 : sim.makespan * 3 <= width ? std::min(std::floor(width / sim.makespan), 6.0)
                                             : width / sim.makespan;
  // At most `width` + 1 columns: scale <= width / makespan, up to rounding.
  size_t columns = std::min<size_t>(width + 1, static_cast<size_t>(std::ceil(sim.makespan * scale)));

  out << "time 0 to " << formatNumber(sim.makespan) << ", one column = "
      << formatNumber(1 / scale) << " time units\n";
  for (size_t line = 0; line < 2 * sim.ranks.size(); ++line) {
    size_t r = line / 2;
    bool copyRow = line % 2 == 1; // a rank's copy stream, drawn when it has ops
    std::string row(columns, '.');
    const std::vector<Op> &ops = ir.ranks[r].ops;
    bool any = false;
    for (uint32_t k = sim.firstStep(r); k < sim.endStep(r); ++k) {
      if (sim.plan->onCopyStream(k) != copyRow)
        continue;
      any = true;
      StepTiming step = sim.step(k);
      size_t from = std::min(columns, static_cast<size_t>(std::lround(step.start * scale)));
      size_t to = std::max(from + 1, static_cast<size_t>(std::lround(step.end * scale)));
      to = std::min(to, columns);
      const Op &op = ops[step.op];
      std::string label = shortLabel(ir, op);
      if (op.pair == PairRole::First)
        label += "+" + shortLabel(ir, ops[step.op + 1]);
      std::string fill = label.size() <= to - from ? label
                                                   : std::string(1, label[0]);
      for (size_t c = from; c < to; ++c)
        row[c] = c - from < fill.size() ? fill[c - from] : (fill.size() == 1 ? fill[0] : '-');
      if (to - from > 1 && fill.size() < to - from)
        row[to - 1] = '|';
    }
    if (copyRow && !any)
      continue;
    out << llvm::format(copyRow ? "copy %3zu |" : "rank %3zu |", r) << row << "|\n";
  }
  out << "F/B/I/W: chunk 0, f/b/i/w: chunk 1 and up, digits: micro-batch within its flow, "
         "X+y: overlap pair, '.': idle\n";
  return true;
}

} // namespace pipec
