// Per-stage live micro-batches at each rank's candidate activation peaks
// (ActivationPeaks.h): one pass over the rank's ops, mirroring the memory
// check's unit accounting stage by stage.
#include "plan/ActivationPeaks.h"

#include "check/Checks.h"

#include <algorithm>
#include <set>
#include <unordered_set>

namespace pipec::plan {

double RankActivationPeaks::peakBytes(const std::vector<double> &stageBytes) const {
  double peak = 0;
  for (const std::vector<double> &counts : moments) {
    double bytes = 0;
    for (size_t i = 0; i < stages.size(); ++i)
      if (size_t(stages[i]) < stageBytes.size())
        bytes += counts[i] * stageBytes[size_t(stages[i])];
    peak = std::max(peak, bytes);
  }
  return peak;
}

double RankActivationPeaks::peakCount() const {
  double peak = 0;
  for (const std::vector<double> &counts : moments) {
    double live = 0;
    for (double n : counts)
      live += n;
    peak = std::max(peak, live);
  }
  return peak;
}

std::vector<RankActivationPeaks> activationPeaks(const ScheduleIR &ir) {
  std::vector<RankActivationPeaks> result(ir.ranks.size());
  for (size_t r = 0; r < ir.ranks.size(); ++r) {
    const std::vector<Op> &ops = ir.ranks[r].ops;
    RankActivationPeaks &peaks = result[r];
    // A rank runs few stages: a linear search beats collecting one per op.
    for (const Op &op : ops)
      if (op.stage >= 0 && activationDelta(op.kind) != 0 &&
          std::find(peaks.stages.begin(), peaks.stages.end(), op.stage) == peaks.stages.end())
        peaks.stages.push_back(op.stage);
    std::sort(peaks.stages.begin(), peaks.stages.end());
    auto indexOf = [&](int32_t stage) {
      return size_t(std::lower_bound(peaks.stages.begin(), peaks.stages.end(), stage) - peaks.stages.begin());
    };
    // (stage, micro-batch) pairs this rank recomputes: their forward keeps nothing.
    auto keyOf = [](const Op &op) { return uint64_t(uint32_t(op.stage)) << 32 | uint32_t(op.microbatch); };
    std::unordered_set<uint64_t> recomputed;
    for (const Op &op : ops)
      if (op.kind == OpKind::R)
        recomputed.insert(keyOf(op));
    std::vector<double> live(peaks.stages.size(), 0);
    std::set<std::vector<double>> moments;
    std::vector<double> last; // the moment taken last: steady states repeat it
    bool rising = false;      // stored more since the last moment taken
    auto fall = [&](size_t i, double by) {
      if (rising && live != last) {
        moments.insert(live);
        last = live;
      }
      rising = false;
      live[i] -= by;
    };
    for (const Op &op : ops) {
      int64_t delta = activationDelta(op.kind);
      if (delta == 0 || op.stage < 0)
        continue;
      double units = double(delta) * double(ir.sizeOf(op.microbatch));
      size_t i = indexOf(op.stage);
      if (units > 0) {
        live[i] += units;
        rising = true;
        if (op.kind == OpKind::F && !recomputed.empty() && recomputed.count(keyOf(op)))
          fall(i, units); // dropped after the forward; its R stores it again
      } else {
        fall(i, -units);
      }
    }
    if (rising)
      moments.insert(live);
    // Keep the moments no other one dominates stage by stage: with every
    // stage's bytes non-negative, a dominated moment is never the peak. Most
    // stored first, so that the dominating ones are kept before they are needed.
    std::vector<std::vector<double>> sorted(moments.begin(), moments.end());
    auto total = [](const std::vector<double> &v) {
      double sum = 0;
      for (double x : v)
        sum += x;
      return sum;
    };
    std::stable_sort(sorted.begin(), sorted.end(),
                     [&](const auto &a, const auto &b) { return total(a) > total(b); });
    for (std::vector<double> &candidate : sorted) {
      bool dominated = std::any_of(peaks.moments.begin(), peaks.moments.end(), [&](const auto &kept) {
        for (size_t i = 0; i < kept.size(); ++i)
          if (candidate[i] > kept[i])
            return false;
        return true;
      });
      if (!dominated)
        peaks.moments.push_back(std::move(candidate));
    }
  }
  return result;
}

} // namespace pipec::plan
