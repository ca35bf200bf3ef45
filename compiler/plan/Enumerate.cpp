#include "plan/Enumerate.h"

#include <algorithm>

namespace pipec::plan {

std::vector<int64_t> divisorsOf(int64_t n) {
  std::vector<int64_t> divisors;
  if (n < 1)
    return divisors;
  divisors.push_back(1);
  int64_t rest = n;
  auto multiply = [&](int64_t prime, int power) {
    size_t count = divisors.size();
    int64_t factor = 1;
    for (int e = 1; e <= power; ++e) {
      factor *= prime;
      for (size_t i = 0; i < count; ++i)
        divisors.push_back(divisors[i] * factor);
    }
  };
  for (int64_t p = 2; p <= rest / p; ++p) {
    int power = 0;
    while (rest % p == 0) {
      rest /= p;
      ++power;
    }
    if (power)
      multiply(p, power);
  }
  if (rest > 1)
    multiply(rest, 1);
  std::sort(divisors.begin(), divisors.end());
  return divisors;
}

std::optional<ParallelSizes> layoutFor(int64_t gpus, int64_t globalBatch, int64_t experts,
                                       int64_t tp, int64_t cp, int64_t pp, int64_t mbs,
                                       int64_t ep, int64_t v, std::string &error) {
  if (gpus < 1 || tp < 1 || cp < 1 || pp < 1 || mbs < 1 || ep < 1 || globalBatch < 1) {
    error = "sizes must be at least 1";
    return std::nullopt;
  }
  // Each factor divides what is left, so no product overflows.
  if (gpus % tp || (gpus / tp) % cp || (gpus / tp / cp) % pp) {
    error = std::to_string(gpus) + " GPUs do not split into pipelines of P = " +
            std::to_string(pp) + " ranks" +
            (tp > 1 ? " x tp " + std::to_string(tp) : std::string()) +
            (cp > 1 ? " x cp " + std::to_string(cp) : std::string());
    return std::nullopt;
  }
  int64_t dp = gpus / tp / cp / pp;
  if (globalBatch % dp || (globalBatch / dp) % mbs) {
    error = "--global-batch " + std::to_string(globalBatch) +
            " is not a whole number of micro-batches of " + std::to_string(mbs) +
            " over dp = " + std::to_string(dp) + " replicas";
    return std::nullopt;
  }
  int64_t microbatches = globalBatch / dp / mbs;
  if (dp % ep || (experts > 0 ? experts % ep != 0 : ep > 1)) {
    error = "--ep " + std::to_string(ep) + " must divide dp = " + std::to_string(dp) +
            " and the " + std::to_string(experts) + " routed experts";
    return std::nullopt;
  }
  ParallelSizes sizes{pp, dp, ep, microbatches, v};
  sizes.tp = tp;
  sizes.cp = cp;
  sizes.mbs = mbs;
  return sizes;
}

std::vector<ParallelSizes> enumerateLayouts(const LayoutSpace &space) {
  std::vector<ParallelSizes> layouts;
  if (space.gpus < 1 || space.globalBatch < 1 || space.layers < 1)
    return layouts;
  std::vector<int64_t> vs = space.hasV ? space.vValues : std::vector<int64_t>{0};
  std::string ignored;
  for (int64_t tp : space.tensorParallel)
    for (int64_t cp : space.contextParallel) {
      if (tp < 1 || cp < 1 || space.gpus % tp || (space.gpus / tp) % cp)
        continue;
      for (int64_t pp : divisorsOf(space.gpus / tp / cp)) {
        int64_t dp = space.gpus / tp / cp / pp;
        if (space.globalBatch % dp)
          continue;
        for (int64_t mbs : space.microBatchSizes)
          for (int64_t v : vs) {
            if (space.hasV && v < 1)
              continue;
            int64_t chunks = space.hasV ? v : space.stagesPerRank;
            if (pp > space.layers / std::max<int64_t>(1, chunks)) // a stage without a layer
              continue;
            for (int64_t ep : divisorsOf(dp))
              if (auto sizes = layoutFor(space.gpus, space.globalBatch, space.experts, tp, cp,
                                         pp, mbs, ep, v, ignored))
                layouts.push_back(*sizes);
          }
      }
    }
  return layouts;
}

uint64_t minimumOps(const ParallelSizes &layout) {
  // Saturating: sizes come from user input and 2 S M can exceed 64 bits.
  uint64_t stages = uint64_t(std::max<int64_t>(1, layout.stages()));
  uint64_t microbatches = uint64_t(std::max<int64_t>(1, layout.microbatches));
  if (stages > UINT64_MAX / 2 / microbatches)
    return UINT64_MAX;
  return 2 * stages * microbatches;
}

} // namespace pipec::plan
