// One layer's seconds on one GPU for one micro-batch, composed from the
// per-operation model (OpTimeModel.h) and the collectives (StageCosts.h):
// every matmul of the layer by its shape, forward, input gradient (dgrad) and
// weight gradient (wgrad); attention; the memory-bound kernels; and the
// tensor-, context- and expert-parallel communication the layer does, with
// the part that overlaps no computation.
#pragma once

#include "plan/Cluster.h"
#include "plan/ModelConfig.h"
#include "plan/Training.h"

#include <array>
#include <cstdint>

namespace pipec::plan {

struct LayerTime {
  // Computation, seconds. Forward of the attention half (norm, projections,
  // attention, residual) and the MLP half (norm, MLP or experts, residual;
  // the head and embedding count here); the backward split into input
  // gradients (with the attention backward and memory-bound kernels) and
  // weight gradients.
  double attentionForward = 0, mlpForward = 0;
  double attentionInputGrad = 0, mlpInputGrad = 0;
  double attentionWeightGrad = 0, mlpWeightGrad = 0;
  // Exposed communication, seconds: tensor parallel per half and direction,
  // context parallel per direction.
  double tpAttentionForward = 0, tpMlpForward = 0, tpAttentionBackward = 0, tpMlpBackward = 0;
  double cpForward = 0, cpBackward = 0;
  // One all-to-all each way (dispatch, combine), seconds; the backward does both again.
  double dispatch = 0, combine = 0;
  // Extra backward work from recomputation (its forward replay), split as above.
  double replayAttention = 0, replayMlp = 0, replayTp = 0, replayCp = 0, replayAllToAll = 0;
  // Bytes one dispatch sends off the GPU (over any link).
  double dispatchBytes = 0;
};

// Where the expert-parallel group lies: its GPUs per node and nodes.
struct ExpertPlacement {
  int64_t ep = 1;
  int64_t gpusPerNode = 1; // of the group, on one node
  int64_t nodes = 1;
};
ExpertPlacement expertPlacement(const Cluster &cluster, const Training &training, int64_t ep);

// The mean number of nodes one token's k expert copies reach when the dispatch
// sends a token once per node and forwards it inside the node over NVLink
// (DeepSeek-V3 §3.2.2; DeepEP and HybridEP do the same): n (1 - (1 - 1/n)^k)
// for experts spread evenly over n nodes, fewer under group-limited routing
// (a token's experts in topk_group of n_group groups, the groups laid on the
// nodes in order). 0 when the dispatch is a plain all-to-all of every copy
// (`deduplicated` false and no group limit) or the group lies in one node.
double distinctNodesPerToken(const ModelConfig &config, const ExpertPlacement &placement, double k,
                             bool deduplicated);

// Seconds of one all-to-all (dispatch or combine) of `tokens` tokens' k copies of
// `bytesPerCopy`. With `distinctNodes` > 0 the dispatch is deduplicated: each
// token crosses the network once per distinct node (the remote share of
// distinctNodes), and is forwarded inside the node over NVLink; otherwise
// every copy for another node crosses. Sets `offGpuBytes`.
double allToAllSeconds(const Cluster &cluster, const ExpertPlacement &placement, double tokens, double k,
                       double bytesPerCopy, double distinctNodes, double &offGpuBytes);

LayerTime layerTime(const ModelConfig &config, LayerKind kind, const Cluster &cluster,
                    const Training &training, int64_t expertParallel);

// One layer of each kind (indexed by LayerKind), timed once; the MoE entry
// stays empty for a dense model.
std::array<LayerTime, 4> layerTimesByKind(const ModelConfig &config, const Cluster &cluster,
                                          const Training &training, int64_t expertParallel);

// A layer's forward and backward computation together, seconds, with the
// replay of recomputation; no communication (schedules differ in what of it
// they hide: DualPipe's pairs hide the all-to-alls). What balancing stages
// weighs.
double layerComputeSeconds(const LayerTime &t);

} // namespace pipec::plan
