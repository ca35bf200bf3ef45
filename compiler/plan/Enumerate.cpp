#include "plan/Enumerate.h"

namespace pipec::plan {

std::vector<ParallelSizes> enumerateLayouts(const LayoutSpace &space) {
  std::vector<ParallelSizes> layouts;
  if (space.gpus < 1 || space.tensorParallel < 1 || space.gpus % space.tensorParallel ||
      space.microBatchSize < 1 || space.globalBatch < 1 || space.layers < 1)
    return layouts;
  int64_t pipelineGpus = space.gpus / space.tensorParallel;
  std::vector<int64_t> vs = space.hasV ? space.vValues : std::vector<int64_t>{0};
  for (int64_t pp = 1; pp <= pipelineGpus; ++pp) {
    if (pipelineGpus % pp)
      continue;
    int64_t dp = pipelineGpus / pp;
    int64_t perStep = dp * space.microBatchSize;
    if (space.globalBatch % perStep)
      continue;
    int64_t microbatches = space.globalBatch / perStep;
    for (int64_t v : vs) {
      if (space.hasV && v < 1)
        continue;
      int64_t chunks = space.hasV ? v : space.stagesPerRank;
      if (pp * chunks > space.layers) // a stage without a layer
        continue;
      for (int64_t ep = 1; ep <= dp; ++ep) {
        if (dp % ep || (space.experts > 0 ? space.experts % ep != 0 : ep > 1))
          continue;
        layouts.push_back({pp, dp, ep, microbatches, v});
      }
    }
  }
  return layouts;
}

} // namespace pipec::plan
