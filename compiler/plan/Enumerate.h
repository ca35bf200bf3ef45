// The parallel layouts the planner tries for one schedule: pipeline depth P,
// data-parallel size dp, expert-parallel size ep, micro-batch count M and, where
// the schedule has one, its chunk count v. Pure arithmetic, no schedule needed.
#pragma once

#include <cstdint>
#include <vector>

namespace pipec::plan {

struct LayoutSpace {
  int64_t gpus = 1;
  int64_t tensorParallel = 1; // t: GPUs = P * dp * t
  int64_t layers = 1;         // transformer layers to split over the stages
  int64_t experts = 0;        // routed experts per MoE layer; 0: a dense model
  int64_t globalBatch = 1;    // sequences per step
  int64_t microBatchSize = 1; // sequences per micro-batch
  bool hasV = false;          // the schedule takes a chunk count `v`
  std::vector<int64_t> vValues{2, 4}; // tried when hasV
  int64_t stagesPerRank = 1;  // chunks per rank when the schedule fixes them (ZB-V: 2)
};

struct ParallelSizes {
  int64_t pp, dp, ep, microbatches, v; // v = 0: the schedule has no v
  int64_t stages() const { return pp * (v > 0 ? v : 1); }
};

// Every layout where P divides the GPUs (over t), each stage holds at least one
// layer, M = globalBatch / (dp * microBatchSize) is a whole number >= 1, and ep
// divides both dp and the experts (ep = 1 for a dense model). The stage count
// need not divide the layers: stages then differ by one layer. Ordered by P, v, ep.
std::vector<ParallelSizes> enumerateLayouts(const LayoutSpace &space);

} // namespace pipec::plan
