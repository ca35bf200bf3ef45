// Costs in seconds and bytes of one parallel layout: each pipeline stage's
// F, B, I, W and their sub-operations (attention, dispatch, MLP, combine), the
// activation message between stages, the step tail (gradient reductions), and
// memory per GPU. The formulas are documented in compiler/plan/README.md.
#pragma once

#include "cost/CostOverride.h"
#include "cost/SubOps.h"
#include "plan/ActivationPeaks.h"
#include "plan/Cluster.h"
#include "plan/ModelConfig.h"
#include "plan/Training.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pipec::plan {

// Where the model runs. GPUs are numbered tensor-parallel rank fastest, then
// data-parallel rank, then pipeline rank, unless `rankNode` says otherwise.
struct ParallelLayout {
  int64_t pipelineRanks = 1;  // P
  int64_t dataParallel = 1;   // dp replicas of the pipeline
  int64_t expertParallel = 1; // ep: experts split over ep of the dp replicas (divides dp)
  int64_t chunksPerRank = 1;  // v
  int64_t microbatches = 1;   // per replica per step
  // Stage s holds layers [first, second) of ModelLayers::layers (the embedding
  // and head are layers there); one entry per stage (P x v).
  std::vector<std::pair<size_t, size_t>> stageLayers;
  std::vector<int64_t> stageRank;     // pipeline rank of each stage
  // Per stage, the rank of its second parameter copy (DualPipe, Chimera:
  // `copies 2`), -1 for none; empty: no stage has one.
  std::vector<int64_t> stageCopyRank;
  // Node of each pipeline rank's GPUs (tensor-parallel rank 0 of data-parallel
  // replica 0); empty: the default numbering above.
  std::vector<int64_t> rankNode;
  // Per rank, the schedule's peak live activations in micro-batches of one
  // chunk (the memory check's peak); empty: P, the 1F1B worst case.
  std::vector<double> peakActivations;
  // Per rank, the schedule's candidate peaks as live micro-batches per stage
  // (ActivationPeaks.h); when set, a rank's activations are the largest sum of
  // its in-flight chunks' own bytes, not peakActivations x its largest chunk.
  std::shared_ptr<const std::vector<RankActivationPeaks>> activationPeaks;
};

struct MemoryBreakdown {
  double params = 0, grads = 0, optimizer = 0, activations = 0, buffers = 0;
  // Outside the framework's tensors: CUDA context, NCCL buffers per
  // communicator, and the allocator's fragmentation margin over the rest.
  double runtime = 0;
  double total = 0;
};

// Where a stage's time goes, per micro-batch on one GPU, seconds: compute
// (matmuls, attention, memory-bound ops) and the exposed (not overlapped)
// part of each parallelism's communication.
struct TimeParts {
  double compute = 0, tp = 0, cp = 0, ep = 0;
  double total() const { return compute + tp + cp + ep; }
};

struct StageCost {
  TimeParts forwardTime, backwardTime; // F = forwardTime.total(), B = backwardTime.total()
  double forwardFlops = 0;         // per GPU, one micro-batch
  double F = 0, B = 0, I = 0, W = 0; // seconds
  SubOpDurations forwardParts{};   // attention, dispatch, mlp, combine; sum to F
  SubOpDurations backwardParts{};  // sum to B
  double messageBytes = 0;         // one activation (or gradient) this stage sends
  // latency + bytes / bandwidth on the slower of its links to the neighbour
  // stages (the cost model has one link per stage); 0 when both share its rank.
  double messageSeconds = 0;
  bool nextOnSameNode = true;      // whether that link stays inside a node
  double allToAllBytes = 0;        // one dispatch's bytes leaving the GPU, all MoE layers of the stage
  double activationBytes = 0;      // stored per micro-batch (after recomputation)
  double paramsPerGpu = 0;         // parameters this stage stores on one GPU
};

struct StepTail {
  // Gradient all-reduce (or reduce-scatter + all-gather) over dp x cp, the part
  // not hidden behind the last backward and first forward.
  double dataParallelSeconds = 0;
  double dataParallelUnhiddenSeconds = 0; // the same collectives before overlap
  double copiesSeconds = 0;       // all-reduce between a replicated stage's two copies (and a tied embedding's)
  double optimizerSeconds = 0;    // the optimizer step over this GPU's shard (memory-bound)
  double total() const { return dataParallelSeconds + copiesSeconds + optimizerSeconds; }
};

// Where one rank's step goes, seconds: its stages' compute and exposed TP, CP
// and EP communication over all micro-batches, its pipeline messages (sent
// and received), its exposed data-parallel reduction and its optimizer step.
// The bubble is the simulation's to add (makespan - what the rank was busy).
struct StepParts {
  double compute = 0, tp = 0, cp = 0, ep = 0, pp = 0, dp = 0, optimizer = 0;
};

struct PlanCosts {
  std::vector<StageCost> stages;
  std::vector<StepParts> rankParts;        // per pipeline rank
  std::vector<MemoryBreakdown> rankMemory; // per pipeline rank, one GPU
  std::vector<double> rankTailSeconds;     // per pipeline rank
  StepTail tail;                           // the slowest rank's
  // The share of each GPU's SMs its dispatch and combine hold while they run
  // (Cluster::commSmShare): compute overlapped with them runs at 1 - share.
  double commSmShare = 0;
};

// nullopt with `error` set when the layout does not fit the model or cluster.
std::optional<PlanCosts> computeCosts(const ModelConfig &config, const ModelLayers &layers,
                                      const Cluster &cluster, const Training &training,
                                      const ParallelLayout &layout, std::string &error);

// The costs as `pipec sim` takes them (F, B, I, W, sub-operations, p2p as the
// whole transfer time and activation_bytes as stored activations, per stage).
std::vector<CostOverride> toCostOverrides(const PlanCosts &costs);
// The same as a `--costs` JSON object.
std::string costsJson(const PlanCosts &costs);

// Building blocks.
// Stored activation bytes of one transformer layer for one micro-batch (recomputation and t applied).
double layerActivationBytes(const ModelConfig &config, LayerKind kind, const Training &training);
// Korthikanti et al. 2022, 16-bit: s*b*h*(34 + 5*a*s/h)/t (none), 34*s*b*h/t (selective), 2*s*b*h/t (full).
double korthikantiActivationBytes(double s, double b, double h, double a, double t, Recompute recompute);
double ringAllReduceSeconds(double bytes, int64_t n, double bandwidth, double latency);
double reduceScatterSeconds(double bytes, int64_t n, double bandwidth, double latency);
// One all-to-all of `bytes` per GPU over ep GPUs: the (ep-1)/ep share leaves the GPU.
double allToAllSeconds(double bytes, int64_t ep, double bandwidth, double latency);
double messageSeconds(double bytes, double bandwidth, double latency);

} // namespace pipec::plan
