// The parallel layouts the planner tries for one schedule: tensor-parallel size
// tp, context-parallel size cp, pipeline depth P, data-parallel size dp,
// expert-parallel size ep, micro-batch size b, micro-batch count M and, where
// the schedule has one, its chunk count v. Pure arithmetic, no schedule needed:
// divisors are enumerated from the factorisation (never by counting up to the
// GPU count), so a cluster of 2^24 GPUs lists its few layouts at once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipec::plan {

struct LayoutSpace {
  int64_t gpus = 1;
  std::vector<int64_t> tensorParallel{1}; // t values tried: GPUs = t * cp * P * dp
  std::vector<int64_t> contextParallel{1}; // cp values tried
  std::vector<int64_t> microBatchSizes{1}; // b values tried (sequences per micro-batch)
  int64_t layers = 1;         // transformer layers to split over the stages
  int64_t experts = 0;        // routed experts per MoE layer; 0: a dense model
  int64_t globalBatch = 1;    // sequences per step
  bool hasV = false;          // the schedule takes a chunk count `v`
  std::vector<int64_t> vValues{2, 4}; // tried when hasV
  int64_t stagesPerRank = 1;  // chunks per rank when the schedule fixes them (ZB-V: 2)
};

struct ParallelSizes {
  int64_t pp, dp, ep, microbatches, v; // v = 0: the schedule has no v
  int64_t tp = 1, cp = 1, mbs = 1;     // tensor, context parallel; sequences per micro-batch
  int64_t stages() const { return pp * (v > 0 ? v : 1); }
  int64_t gpus() const { return tp * cp * pp * dp; }
};

// The positive divisors of n (n >= 1), ascending, from its prime factors:
// O(sqrt(n)) trial division, then the product set (at most a few thousand).
std::vector<int64_t> divisorsOf(int64_t n);

// The layout of one pipeline depth on `gpus` GPUs: dp = gpus / (tp cp P),
// M = globalBatch / (dp b), ep dividing dp and the experts. nullopt with
// `error` saying which division fails. The one place this arithmetic lives
// (the planner's enumeration and `sim --model` both use it).
std::optional<ParallelSizes> layoutFor(int64_t gpus, int64_t globalBatch, int64_t experts,
                                       int64_t tp, int64_t cp, int64_t pp, int64_t mbs,
                                       int64_t ep, int64_t v, std::string &error);

// Every layout where tp cp P divides the GPUs, each stage holds at least one
// layer, M = globalBatch / (dp * b) is a whole number >= 1, and ep divides both
// dp and the experts (ep = 1 for a dense model). The stage count need not
// divide the layers: stages then differ by one layer. Ordered by tp, cp, P, b, v, ep.
std::vector<ParallelSizes> enumerateLayouts(const LayoutSpace &space);

// A lower bound on the ops any pipeline schedule elaborates at these sizes:
// every micro-batch runs a forward and a backward on every stage (2 S M). Lets
// the planner refuse a layout over --max-ops before elaborating it.
uint64_t minimumOps(const ParallelSizes &layout);

} // namespace pipec::plan
