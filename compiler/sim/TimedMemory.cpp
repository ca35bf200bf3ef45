// Peak activations over time (sim/TimedMemory.h).
#include "sim/TimedMemory.h"

#include <algorithm>
#include <unordered_set>

namespace pipec {

bool hasMemoryOps(const ScheduleIR &ir) {
  for (const RankOps &rank : ir.ranks)
    for (const Op &op : rank.ops)
      if (isMemoryOp(op.kind))
        return true;
  return false;
}

std::vector<int64_t> timedPeakActivations(const ScheduleIR &ir, const SimResult &sim) {
  std::vector<int64_t> peaks(ir.ranks.size(), 0);
  struct Event {
    double time;
    int64_t delta;
  };
  std::vector<Event> events;
  for (size_t r = 0; r < ir.ranks.size(); ++r) {
    const std::vector<Op> &ops = ir.ranks[r].ops;
    std::unordered_set<uint64_t> recomputed;
    auto keyOf = [](const Op &op) {
      return uint64_t(uint32_t(op.stage)) << 32 | uint32_t(op.microbatch);
    };
    for (const Op &op : ops)
      if (op.kind == OpKind::R)
        recomputed.insert(keyOf(op));
    events.clear();
    for (uint32_t k = sim.firstStep(r); k < sim.endStep(r); ++k) {
      StepTiming step = sim.step(k);
      uint32_t count = ops[step.op].pair == PairRole::First ? 2 : 1;
      for (uint32_t i = step.op; i < step.op + count; ++i) {
        const Op &op = ops[i];
        int64_t delta = activationDelta(op.kind) * ir.sizeOf(op.microbatch);
        if (delta > 0)
          events.push_back({step.start, delta});
        else if (delta < 0)
          events.push_back({step.end, delta});
        if (op.kind == OpKind::F && recomputed.count(keyOf(op)))
          events.push_back({step.end, -delta}); // kept only the stage input (0 units)
      }
    }
    std::stable_sort(events.begin(), events.end(), [](const Event &a, const Event &b) {
      return a.time != b.time ? a.time < b.time : a.delta < b.delta; // frees first
    });
    int64_t live = 0;
    for (const Event &e : events) {
      live += e.delta;
      peaks[r] = std::max(peaks[r], live);
    }
  }
  return peaks;
}

} // namespace pipec
