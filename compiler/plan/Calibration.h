// `pipec calibrate`: measurements of the user's own cluster reduced to the
// numbers the planner's cluster file holds. Three sources give measurements:
// a PyTorch profiler (Kineto) trace (KinetoTrace.h), the GPU sweep program
// (runtime/cuda/calibrate, whose JSON `readSweepResults` reads) and a pipec
// program trace (TraceProfile.h, reduced by `calibrateFromProfile`). Each
// measurement is one timed operation: a matmul or attention with its FLOPs, a
// collective with its bytes, group size and reach.
#pragma once

#include "plan/Cluster.h"
#include "plan/TraceProfile.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipec::plan {

enum class MeasuredKind {
  Matmul,
  Attention,         // a fused (FlashAttention-style) forward
  AttentionBackward, // its backward
  UnfusedAttention,  // QK^T, softmax, AV as separate kernels: reported, not applied
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  SendRecv
};

struct Measurement {
  MeasuredKind kind = MeasuredKind::Matmul;
  std::string name;     // what was timed ("aten::mm", "ncclAllReduce"), for reports
  double flops = 0;     // matmul, attention
  double m = 0, n = 0, k = 0; // matmul: C[m, n] = A[m, k] B[k, n] (a batch folded into m); 0: unknown
  double bytes = 0;     // collective: the buffer (NCCL tests' "size")
  int64_t ranks = 0;    // collective: group size
  bool interNode = false; // collective: the group spans nodes
  // Collective across nodes: the group's members in one node. Their NICs share
  // the crossing (StageCosts.cpp, groupBusBandwidth), so the fit divides the
  // bus bytes by it to find one NIC's rate.
  int64_t membersPerNode = 1;
  double seconds = 0;   // measured device time
};

bool isCollective(MeasuredKind kind);
const char *measuredKindName(MeasuredKind kind);
std::optional<MeasuredKind> parseMeasuredKind(llvm::StringRef name);

// One link's fit: time = steps x latency + busBytes / bandwidth (the planner's
// collective model: a ring all-reduce has 2(n-1) steps and moves 2(n-1)/n of
// the buffer per GPU; all-gather, reduce-scatter and all-to-all n-1 and (n-1)/n).
struct LinkFit {
  double bandwidth = 0; // bytes/s per GPU per direction
  double latency = 0;   // seconds per step
  size_t samples = 0;
  double meanError = 0; // mean |fit - measured| / measured
};

// One kind of compute: FLOP-weighted achieved share of the bf16 peak
// (sum of FLOPs / sum of (time x peak)); 0 when nothing was timed.
struct ComputeFit {
  double efficiency = 0, flops = 0, seconds = 0;
  size_t samples = 0;
  // Matmuls: the model's matmul_efficiency that reproduces the measured time
  // of the same shapes (its tile and wave losses taken out); else `efficiency`.
  double modelEfficiency = 0;
};

struct Calibration {
  ComputeFit matmul, attentionForward, attentionBackward, unfusedAttention;
  std::optional<LinkFit> intraNode, interNode;
};

// Reduces measurements against the cluster's peak; nullopt with `error` when
// nothing could be measured or a result is out of range (faster than peak).
std::optional<Calibration> calibrate(const std::vector<Measurement> &measurements,
                                     const Cluster &base, std::string &error);

// `base` with what was measured replacing its numbers: matmul_efficiency,
// attention_forward/backward_efficiency, and per link the bandwidth (the fit's
// bus bandwidth over the cluster's bus_efficiency, so a collective achieves
// what was measured) and latency. Every other field stays.
Cluster applyCalibration(const Cluster &base, const Calibration &calibration);

// The cluster file `readCluster` reads: every field, finite, plain SI units.
// (The GPU preset's name is not a field: every number is written out.)
std::string clusterJson(const Cluster &cluster);

// The GPU sweep's results: {"measurements": [{"kind": "matmul", "flops": ...,
// "seconds": ...}, {"kind": "all_reduce", "bytes": ..., "ranks": 8,
// "inter_node": false, "seconds": ...}, ...]}; an inter-node collective may
// give "members_per_node" (default 1).
std::optional<std::vector<Measurement>> readSweepResults(llvm::StringRef text,
                                                         llvm::StringRef name, std::string &error);

// A cluster whose compute efficiencies (matmul, attention, memory-bound
// kernels) are `base`'s times `scale`, each at most 1.
Cluster scaleCompute(const Cluster &base, double scale);
// The largest scale scaleCompute can take before an efficiency passes 1.
double maxComputeScale(const Cluster &base);

// A pipec program trace against the model's prediction: the measured time of
// the lone F, B, I, W ops the trace timed (each stage's mean x its samples),
// and the same ops' predicted time.
double profiledSeconds(const std::vector<StageProfile> &measured,
                       const std::vector<StageProfile> &weights);

} // namespace pipec::plan
