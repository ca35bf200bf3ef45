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

enum class MeasuredKind { Matmul, Attention, AllReduce, AllGather, ReduceScatter, AllToAll, SendRecv };

struct Measurement {
  MeasuredKind kind = MeasuredKind::Matmul;
  std::string name;     // what was timed ("aten::mm", "ncclAllReduce"), for reports
  double flops = 0;     // matmul, attention
  double bytes = 0;     // collective: the buffer (NCCL tests' "size")
  int64_t ranks = 0;    // collective: group size
  bool interNode = false; // collective: the group spans nodes
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

struct Calibration {
  // FLOP-weighted achieved share of peak: sum of FLOPs / sum of (time x peak).
  double matmulEfficiency = 0, attentionEfficiency = 0, computeEfficiency = 0;
  size_t matmulSamples = 0, attentionSamples = 0;
  double matmulFlops = 0, attentionFlops = 0;
  std::optional<LinkFit> intraNode, interNode;
};

// Reduces measurements against the cluster's peak; nullopt with `error` when
// nothing could be measured or a result is out of range (faster than peak).
std::optional<Calibration> calibrate(const std::vector<Measurement> &measurements,
                                     const Cluster &base, std::string &error);

// `base` with what was measured replacing its numbers (compute: the sustained
// fraction; links: bandwidth and latency). Every other field stays.
Cluster applyCalibration(const Cluster &base, const Calibration &calibration);

// The cluster file `readCluster` reads: every field, finite, plain SI units.
std::string clusterJson(const Cluster &cluster);

// The GPU sweep's results: {"measurements": [{"kind": "matmul", "flops": ...,
// "seconds": ...}, {"kind": "all_reduce", "bytes": ..., "ranks": 8,
// "inter_node": false, "seconds": ...}, ...]}.
std::optional<std::vector<Measurement>> readSweepResults(llvm::StringRef text,
                                                         llvm::StringRef name, std::string &error);

// A pipec program trace of a schedule whose per-stage costs the model predicts
// as `predicted` at `base`'s sustained fraction: the fraction at which the
// model's F, B, I and W sum to the measured ones (time-weighted over the
// stages measured). nullopt with `error` when the trace measured nothing.
std::optional<double> sustainedFractionFromProfile(const std::vector<StageProfile> &measured,
                                                   const std::vector<StageProfile> &predicted,
                                                   double baseFraction, std::string &error);

} // namespace pipec::plan
