#include "plan/StageCosts.h"

#include "plan/TpOverlap.h"

#include "plan/LayerTimes.h"
#include "plan/OpTimeModel.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

namespace pipec::plan {

namespace {

bool checkLayout(const ModelConfig &config, const ModelLayers &model, const Cluster &cluster,
                 const Training &training, const ParallelLayout &l, std::string &error) {
  auto bad = [&](const std::string &message) {
    error = "layout: " + message;
    return false;
  };
  if (l.pipelineRanks < 1 || l.dataParallel < 1 || l.expertParallel < 1 || l.chunksPerRank < 1 ||
      l.microbatches < 1)
    return bad("pipeline ranks, data and expert parallelism, chunks and micro-batches must be at least 1");
  if (l.dataParallel % l.expertParallel != 0)
    return bad("expert parallelism " + std::to_string(l.expertParallel) +
               " does not divide data parallelism " + std::to_string(l.dataParallel));
  if (l.expertParallel > 1 && !config.isMoe())
    return bad("expert parallelism " + std::to_string(l.expertParallel) + " needs an MoE model");
  if (config.numHeads % training.tensorParallel != 0)
    return bad("tensor parallelism " + std::to_string(training.tensorParallel) +
               " does not divide the " + std::to_string(config.numHeads) + " attention heads");
  // In doubles: the product of three int64 factors may not fit one.
  double gpus = double(l.pipelineRanks) * double(l.dataParallel) * double(training.modelParallelGpus());
  if (gpus > double(cluster.gpus))
    return bad("needs " + std::to_string(int64_t(std::min(gpus, 9e18))) + " GPUs (P x dp x t x cp), the cluster has " +
               std::to_string(cluster.gpus));
  if (training.precision == Precision::FP8 && cluster.peakFlopsFp8 <= 0)
    return bad("--precision fp8 needs FP8 tensor cores; the cluster's peak_flops_fp8 is 0");
  if (training.tpCommOverlap) {
    std::string problem = tpOverlapClusterProblem(training.tpOverlapConfig, cluster);
    if (!problem.empty())
      return bad(problem);
  }
  if (double(l.pipelineRanks) * double(l.chunksPerRank) != double(l.stageLayers.size()))
    return bad("has " + std::to_string(l.stageLayers.size()) + " stage layer ranges for " +
               std::to_string(l.pipelineRanks) + " x " + std::to_string(l.chunksPerRank) +
               " stages (P x v)");
  size_t stages = l.stageLayers.size();
  size_t next = 0;
  for (size_t s = 0; s < stages; ++s) {
    auto [first, last] = l.stageLayers[s];
    if (first != next || last <= first)
      return bad("stage " + std::to_string(s) + " holds layers [" + std::to_string(first) + ", " +
                 std::to_string(last) + "); stages must hold contiguous, non-empty ranges in order from layer 0");
    next = last;
  }
  if (next != model.layers.size())
    return bad("the stages hold " + std::to_string(next) + " of the model's " +
               std::to_string(model.layers.size()) + " layers");
  if (l.stageRank.size() != stages)
    return bad("has " + std::to_string(l.stageRank.size()) + " stage ranks for " + std::to_string(stages) + " stages");
  for (size_t s = 0; s < stages; ++s) {
    if (l.stageRank[s] < 0 || l.stageRank[s] >= l.pipelineRanks)
      return bad("stage " + std::to_string(s) + " is placed on rank " + std::to_string(l.stageRank[s]) +
                 ", outside 0.." + std::to_string(l.pipelineRanks - 1));
    if (!l.stageCopyRank.empty() &&
        (l.stageCopyRank[s] < -1 || l.stageCopyRank[s] >= l.pipelineRanks))
      return bad("stage " + std::to_string(s) + "'s copy is placed on rank " +
                 std::to_string(l.stageCopyRank[s]));
  }
  if (!l.stageCopyRank.empty() && l.stageCopyRank.size() != stages)
    return bad("has " + std::to_string(l.stageCopyRank.size()) + " copy ranks for " + std::to_string(stages) + " stages");
  if (!l.rankNode.empty() && l.rankNode.size() != size_t(l.pipelineRanks))
    return bad("has " + std::to_string(l.rankNode.size()) + " rank nodes for " +
               std::to_string(l.pipelineRanks) + " ranks");
  if (!l.peakActivations.empty() && l.peakActivations.size() != size_t(l.pipelineRanks))
    return bad("has " + std::to_string(l.peakActivations.size()) + " peak activations for " +
               std::to_string(l.pipelineRanks) + " ranks");
  if (l.activationPeaks && l.activationPeaks->size() != size_t(l.pipelineRanks))
    return bad("has activation peaks for " + std::to_string(l.activationPeaks->size()) + " ranks, not " +
               std::to_string(l.pipelineRanks));
  for (double peak : l.peakActivations)
    if (!std::isfinite(peak) || peak < 0)
      return bad("a peak activation count is negative or not finite");
  return true;
}

// The node of a pipeline rank's first GPU: tensor-parallel rank fastest, then
// data-parallel replica, then pipeline rank.
int64_t nodeOfRank(const ParallelLayout &l, const Cluster &cluster, const Training &training,
                   int64_t rank) {
  if (!l.rankNode.empty())
    return l.rankNode[size_t(rank)];
  return cluster.nodeOf(rank * l.dataParallel * training.modelParallelGpus());
}

struct StageWork {
  double attention = 0, scores = 0, mlp = 0; // forward FLOPs per GPU
  int64_t moeLayers = 0, routedCopies = 0;
  double params = 0, expertParams = 0; // stored, whole (not yet divided by t, ep)
  double activationBytes = 0, largestLayerActivation = 0, largestLayerParams = 0;
  // Of activationBytes, the head's (its norm and projection inputs, fp32
  // logits): the last stage runs its backward right after its forward, so
  // these live for one micro-batch only.
  double headActivationBytes = 0;
};

StageWork stageWork(const ModelConfig &config, const ModelLayers &model, const Training &training,
                    std::pair<size_t, size_t> range) {
  double cp = double(training.contextParallel);
  double tokens = double(training.microBatch) * double(training.sequenceLength) / cp;
  double t = double(training.tensorParallel), s = double(training.sequenceLength);
  Training noRecompute = training;
  noRecompute.recompute = Recompute::None;
  StageWork w;
  int64_t transformerIndex = 0; // of the stage's transformer layers, for the block method
  for (size_t i = range.first; i < range.second; ++i) {
    const LayerSpec &layer = model.layers[i];
    bool transformer = layer.kind == LayerKind::Dense || layer.kind == LayerKind::Moe;
    // Full recomputation of only the first recompute_num_layers: the others
    // keep their activations as without recomputation.
    const Training &kept = training.recompute != Recompute::Full || !transformer ||
                                   training.recomputesLayerInFull(transformerIndex)
                               ? training
                               : noRecompute;
    if (transformer)
      ++transformerIndex;
    w.attention += tokens * layer.attentionFlopsPerToken / t;
    w.scores += tokens * layer.attentionScoreFlopsPerTokenPerPosition * s / t;
    w.mlp += tokens * layer.mlpFlopsPerToken / t;
    if (layer.kind == LayerKind::Moe) {
      ++w.moeLayers;
      w.routedCopies = layer.routedCopiesPerToken;
    }
    w.params += layer.storedParams;
    w.expertParams += layer.expertParams;
    w.largestLayerParams = std::max(w.largestLayerParams, layer.storedParams);
    w.activationBytes += layerActivationBytes(config, layer.kind, kept);
    w.largestLayerActivation =
        std::max(w.largestLayerActivation, layerActivationBytes(config, layer.kind, noRecompute));
    double e = bytesOf(training.activationType), h = double(config.hiddenSize);
    // Korthikanti et al.: the embedding's dropout mask; the head's norm
    // input, projection input and fp32 logits for the loss.
    if (layer.kind == LayerKind::Embedding && config.dropout)
      w.activationBytes += tokens * h / t;
    if (layer.kind == LayerKind::Head) { // the head, or an MTP module's pass through it
      double head = (2 * e * tokens * h + 4 * tokens * double(config.vocabSize)) / t;
      w.headActivationBytes += head;
      w.activationBytes += head;
    }
  }
  return w;
}

// The bus bandwidth of a gradient collective over a group that spans nodes
// with `membersPerNode` of its members in each. A ring enters and leaves a
// node once per channel, and NCCL lays its channels over the NICs of the
// members there (one per GPU on the clusters modelled), so the crossing runs
// at that many NICs' rate, never faster than NVLink. Measured with
// NCCL_ALGO=Ring, 1.6 GB over 8 GPUs took 363, 173 and 132 ms as 1, 2 and 4
// per node (NVIDIA/nccl#569), and NCCL's author gives "~12 GB/s with each NIC,
// then ~24 when using 2 NICs" (NVIDIA/nccl#307). Within one node: NVLink.
double groupBusBandwidth(const Cluster &cluster, bool inNode, int64_t membersPerNode) {
  if (inNode)
    return cluster.busBandwidth(true);
  double nics = double(std::max<int64_t>(1, membersPerNode));
  return std::min(cluster.busBandwidth(true), nics * cluster.busBandwidth(false));
}

} // namespace

std::optional<PlanCosts> computeCosts(const ModelConfig &config, const ModelLayers &model,
                                      const Cluster &cluster, const Training &training,
                                      const ParallelLayout &l, std::string &error) {
  if (!validateCluster(cluster, error) || !validateTraining(training, error) ||
      !checkLayout(config, model, cluster, training, l, error))
    return std::nullopt;
  const double t = double(training.tensorParallel), cp = double(training.contextParallel);
  const double e = bytesOf(training.activationType), h = double(config.hiddenSize);
  const double tokens = double(training.microBatch) * double(training.sequenceLength) / cp;
  const size_t stages = l.stageLayers.size();
  const int64_t mp = training.modelParallelGpus();
  // The gradient-reduction group: dp replicas x cp (context-parallel ranks
  // hold the same weights), each member t apart... in the numbering t x cp
  // fastest, so the group lies in one node when dp x t x cp GPUs do.
  const int64_t reduceGroup = l.dataParallel * training.contextParallel;
  const bool dataGroupInNode = double(l.dataParallel) * double(mp) <= double(cluster.gpusPerNode);
  // Members of the group in one node: a node holds gpus_per_node / t of the
  // dp x cp positions, and the expert group (dp x cp / ep) one in ep of them.
  const int64_t positionsPerNode = std::max<int64_t>(1, cluster.gpusPerNode / training.tensorParallel);
  const int64_t denseMembersPerNode = std::min(reduceGroup, positionsPerNode);
  const int64_t expertMembersPerNode =
      std::min(std::max<int64_t>(1, reduceGroup / l.expertParallel),
               std::max<int64_t>(1, positionsPerNode / l.expertParallel));

  // One layer of each kind, timed once.
  const std::array<LayerTime, 4> kinds = layerTimesByKind(config, cluster, training, l.expertParallel);
  // Under full recomputation of only some layers a stage (Megatron's block
  // method), the others run as without recomputation.
  LayerTime kept[4];
  const bool someLayers = training.recompute == Recompute::Full && training.recomputeLayers > 0;
  if (someLayers) {
    Training noRecompute = training;
    noRecompute.recompute = Recompute::None;
    for (LayerKind kind : {LayerKind::Dense, LayerKind::Moe})
      if (kind != LayerKind::Moe || config.isMoe())
        kept[int(kind)] = layerTime(config, kind, cluster, noRecompute, l.expertParallel);
  }

  // The last stage holds a copy of the embedding matrix: a tied head, or
  // the one the MTP modules read their input through.
  const bool sharedEmbeddingCopy = config.tiedEmbeddings || model.mtpModules > 0;
  PlanCosts costs;
  costs.commSmShare = cluster.commSmShare();
  costs.stages.resize(stages);
  std::vector<StageWork> work(stages);
  for (size_t s = 0; s < stages; ++s) {
    StageWork &w = work[s] = stageWork(config, model, training, l.stageLayers[s]);
    StageCost &c = costs.stages[s];
    c.forwardFlops = w.attention + w.scores + w.mlp;
    double attnF = 0, mlpF = 0, dispatch = 0, combine = 0, attnB = 0, mlpB = 0, weight = 0;
    TimeParts &fwd = c.forwardTime, &bwd = c.backwardTime;
    int64_t transformerIndex = 0;
    for (size_t i = l.stageLayers[s].first; i < l.stageLayers[s].second; ++i) {
      LayerKind kind = model.layers[i].kind;
      bool transformer = kind == LayerKind::Dense || kind == LayerKind::Moe;
      const LayerTime &x =
          someLayers && transformer && !training.recomputesLayerInFull(transformerIndex) ? kept[int(kind)]
                                                                                         : kinds[int(kind)];
      if (transformer)
        ++transformerIndex;
      attnF += x.attentionForward + x.tpAttentionForward + x.cpForward;
      mlpF += x.mlpForward + x.tpMlpForward;
      dispatch += x.dispatch;
      combine += x.combine;
      attnB += x.attentionInputGrad + x.attentionWeightGrad + x.tpAttentionBackward + x.cpBackward +
               x.replayAttention + x.replayCp + x.replayTp / 2;
      mlpB += x.mlpInputGrad + x.mlpWeightGrad + x.tpMlpBackward + x.replayMlp + x.replayTp / 2;
      weight += x.attentionWeightGrad + x.mlpWeightGrad;
      c.allToAllBytes += x.dispatchBytes;
      fwd.compute += x.attentionForward + x.mlpForward;
      fwd.tp += x.tpAttentionForward + x.tpMlpForward;
      fwd.cp += x.cpForward;
      fwd.ep += x.dispatch + x.combine;
      bwd.compute += x.attentionInputGrad + x.attentionWeightGrad + x.mlpInputGrad + x.mlpWeightGrad +
                     x.replayAttention + x.replayMlp;
      bwd.tp += x.tpAttentionBackward + x.tpMlpBackward + x.replayTp;
      bwd.cp += x.cpBackward + x.replayCp;
      bwd.ep += x.dispatch + x.combine + x.replayAllToAll;
    }
    double replayA2a = bwd.ep - fwd.ep;
    c.forwardParts = {attnF, dispatch, mlpF, combine};
    // Backward: the gradients cross the all-to-alls the other way (and a full
    // recomputation's replay crosses them once more).
    c.backwardParts = {attnB, dispatch + replayA2a / 2, mlpB, combine + replayA2a / 2};
    c.F = attnF + mlpF + dispatch + combine;
    c.B = c.backwardParts[0] + c.backwardParts[1] + c.backwardParts[2] + c.backwardParts[3];
    // W: the weight-gradient matmuls; I: the rest of B (input gradients, the
    // attention backward, communication and any replay).
    c.W = weight;
    c.I = c.B - c.W;
    c.activationBytes = w.activationBytes;
    c.paramsPerGpu = (w.params - w.expertParams) / t + w.expertParams / (t * double(l.expertParallel));
    c.messageBytes = tokens * h * e / t;
  }
  // A stage's messages go to both neighbours; the cost model has one link per
  // stage, so each stage takes its slower one (none when both share its rank).
  for (size_t s = 0; s < stages; ++s) {
    StageCost &c = costs.stages[s];
    int64_t rank = l.stageRank[s];
    for (size_t n : {s - 1, s + 1}) {
      if (n >= stages || l.stageRank[n] == rank)
        continue;
      bool same = nodeOfRank(l, cluster, training, rank) == nodeOfRank(l, cluster, training, l.stageRank[n]);
      double seconds = messageSeconds(c.messageBytes, cluster.bandwidth(same), cluster.latency(same));
      if (seconds > c.messageSeconds) {
        c.messageSeconds = seconds;
        c.nextOnSameNode = same;
      }
    }
  }

  // Memory and the step tail, per rank.
  const int64_t P = l.pipelineRanks, ep = l.expertParallel;
  const double paramBytes = bytesOf(training.paramType), gradBytes = bytesOf(training.gradType);
  const double optimizerBytes = training.optimizerBytesPerParam();
  const int zero = training.zeroStage;
  // Communicators a GPU joins, each with its NCCL buffers: tensor, context,
  // expert, data parallel and the pipeline's point-to-point.
  int communicators = (training.tensorParallel > 1) + (training.contextParallel > 1) + (ep > 1) +
                      (reduceGroup > 1) + (P > 1);
  costs.rankMemory.assign(size_t(P), {});
  costs.rankTailSeconds.assign(size_t(P), 0);
  costs.rankParts.assign(size_t(P), {});
  std::vector<StepTail> tails(static_cast<size_t>(P));
  const size_t last = stages - 1;
  // Each stage's stored bytes a micro-batch without the head's (counted once
  // below), for weighing the schedule's in-flight chunks one by one.
  std::vector<double> stageActivationBytes(stages);
  for (size_t s = 0; s < stages; ++s)
    stageActivationBytes[s] = costs.stages[s].activationBytes - work[s].headActivationBytes;
  for (int64_t r = 0; r < P; ++r) {
    MemoryBreakdown &m = costs.rankMemory[size_t(r)];
    double dense = 0, experts = 0, largestActivation = 0, largestLayerActivation = 0,
           largestLayerParams = 0, largestMessage = 0, largestA2a = 0, rankF = 0, rankB = 0,
           headActivation = 0;
    auto copiesOn = [&](size_t s) {
      return int(l.stageRank[s] == r) + int(!l.stageCopyRank.empty() && l.stageCopyRank[s] == r);
    };
    for (size_t s = 0; s < stages; ++s) {
      int copies = copiesOn(s);
      if (copies == 0)
        continue;
      const StageWork &w = work[s];
      dense += copies * (w.params - w.expertParams) / t;
      experts += copies * w.expertParams / (t * double(ep));
      largestActivation = std::max(largestActivation, costs.stages[s].activationBytes - w.headActivationBytes);
      headActivation = std::max(headActivation, w.headActivationBytes);
      largestLayerActivation = std::max(largestLayerActivation, w.largestLayerActivation);
      largestLayerParams = std::max(largestLayerParams, w.largestLayerParams / t);
      largestMessage = std::max(largestMessage, costs.stages[s].messageBytes);
      largestA2a = std::max(largestA2a, tokens / t * double(w.routedCopies) * h * e);
      rankF += costs.stages[s].F;
      rankB += costs.stages[s].B;
    }
    // A tied head on the embedding's rank is the embedding matrix itself:
    // one parameter, counted once (with its gradient and optimizer state).
    // So is the embedding copy the MTP modules keep on the last stage.
    if (sharedEmbeddingCopy)
      dense -= std::min(copiesOn(0), copiesOn(last)) * double(config.vocabSize) * h / t;
    // ZeRO shards over the replicas holding the same parameters: dp x cp for
    // dense ones, dp x cp / ep for experts.
    double denseReplicas = double(reduceGroup), expertReplicas = double(reduceGroup / ep);
    auto sharded = [&](double bytesPerParam, int fromStage) {
      return zero >= fromStage ? dense * bytesPerParam / denseReplicas + experts * bytesPerParam / expertReplicas
                               : (dense + experts) * bytesPerParam;
    };
    m.params = sharded(paramBytes, 3);
    m.grads = sharded(gradBytes, 2);
    m.optimizer = sharded(optimizerBytes, 1);
    if (l.activationPeaks) {
      m.activations = (*l.activationPeaks)[size_t(r)].peakBytes(stageActivationBytes) + headActivation;
    } else {
      double peak = l.peakActivations.empty() ? double(P) : l.peakActivations[size_t(r)];
      m.activations = peak * largestActivation + headActivation;
    }
    // Two activations and two gradients in flight (a send and a receive each);
    // an MoE layer's dispatch and combine receive buffers; with full
    // recomputation, one layer's activations rebuilt for its backward; with
    // ZeRO-3, one layer's gathered parameters.
    m.buffers = 4 * largestMessage + 2 * largestA2a;
    if (training.recompute == Recompute::Full)
      m.buffers += largestLayerActivation;
    if (zero >= 3)
      m.buffers += largestLayerParams * paramBytes;
    double tensors = m.params + m.grads + m.optimizer + m.activations + m.buffers;
    m.runtime = cluster.fragmentation * tensors + cluster.cudaContextBytes +
                double(communicators) * cluster.ncclBufferBytes;
    m.total = tensors + m.runtime;

    // Gradient reduction over the data-parallel (x context-parallel) replicas
    // (experts over dp x cp / ep).
    StepTail &tail = tails[size_t(r)];
    double lat = cluster.latency(dataGroupInNode);
    double reduceSeconds = 0, gatherSeconds = 0;
    auto reduce = [&](double params, int64_t replicas, int64_t membersPerNode) {
      if (params == 0 || replicas <= 1)
        return;
      double bw = groupBusBandwidth(cluster, dataGroupInNode, membersPerNode);
      double grads = params * gradBytes;
      if (zero == 0) {
        reduceSeconds += ringAllReduceSeconds(grads, replicas, bw, lat);
        return;
      }
      // Reduce-scatter the gradients, all-gather the updated parameters (ZeRO-3:
      // once for the forward and once for the backward).
      reduceSeconds += reduceScatterSeconds(grads, replicas, bw, lat);
      gatherSeconds += (zero >= 3 ? 2 : 1) * reduceScatterSeconds(params * paramBytes, replicas, bw, lat);
    };
    reduce(dense, reduceGroup, denseMembersPerNode);
    reduce(experts, reduceGroup / ep, expertMembersPerNode);
    tail.dataParallelUnhiddenSeconds = reduceSeconds + gatherSeconds;
    // Overlapped: the reduction runs behind this rank's last backward (one
    // micro-batch of each chunk), the gather behind its first forward.
    tail.dataParallelSeconds = training.overlapGradReduce
                                   ? std::max(0.0, reduceSeconds - rankB) + std::max(0.0, gatherSeconds - rankF)
                                   : reduceSeconds + gatherSeconds;
    // The optimizer step over this GPU's shard, memory-bound: AdamW reads and
    // writes the fp32 master and both moments, reads the gradient and writes
    // the 16-bit parameter.
    double shard = zero >= 1 ? dense / denseReplicas + experts / expertReplicas : dense + experts;
    tail.optimizerSeconds = memoryBoundSeconds(cluster, shard * (2 * optimizerBytes + gradBytes + paramBytes));
    // A replicated stage's two copies sum their gradients: an all-reduce of two.
    if (!l.stageCopyRank.empty())
      for (size_t s = 0; s < stages; ++s) {
        int64_t a = l.stageRank[s], b = l.stageCopyRank[s];
        if (b < 0 || a == b || (a != r && b != r))
          continue;
        bool same = nodeOfRank(l, cluster, training, a) == nodeOfRank(l, cluster, training, b);
        const StageWork &w = work[s];
        double bytes = ((w.params - w.expertParams) / t + w.expertParams / (t * double(ep))) * gradBytes;
        tail.copiesSeconds += ringAllReduceSeconds(bytes, 2, cluster.busBandwidth(same), cluster.latency(same));
      }
    // A tied embedding and head (or the MTP modules' embedding copy) on two
    // ranks are one parameter with two copies (Megatron's embedding group):
    // their gradients are summed too.
    int64_t embeddingRank = l.stageRank.front(), headRank = l.stageRank.back();
    if (sharedEmbeddingCopy && embeddingRank != headRank && (r == embeddingRank || r == headRank)) {
      bool same = nodeOfRank(l, cluster, training, embeddingRank) == nodeOfRank(l, cluster, training, headRank);
      double bytes = double(config.vocabSize) * h / t * gradBytes;
      tail.copiesSeconds += ringAllReduceSeconds(bytes, 2, cluster.busBandwidth(same), cluster.latency(same));
    }
    costs.rankTailSeconds[size_t(r)] = tail.total();
    StepParts &parts = costs.rankParts[size_t(r)];
    const double M = double(l.microbatches);
    for (size_t s = 0; s < stages; ++s) {
      if (l.stageRank[s] != r)
        continue;
      const StageCost &c = costs.stages[s];
      parts.compute += M * (c.forwardTime.compute + c.backwardTime.compute);
      parts.tp += M * (c.forwardTime.tp + c.backwardTime.tp);
      parts.cp += M * (c.forwardTime.cp + c.backwardTime.cp);
      parts.ep += M * (c.forwardTime.ep + c.backwardTime.ep);
      parts.pp += M * 2 * c.messageSeconds; // the activation out, its gradient back
    }
    parts.dp = tail.dataParallelSeconds + tail.copiesSeconds;
    parts.optimizer = tail.optimizerSeconds;
    if (tail.total() > costs.tail.total())
      costs.tail = tail;
  }
  return costs;
}

std::vector<CostOverride> toCostOverrides(const PlanCosts &costs) {
  static const char *kForward[] = {"attn_f", "dispatch_f", "mlp_f", "combine_f"};
  static const char *kBackward[] = {"attn_b", "dispatch_b", "mlp_b", "combine_b"};
  std::vector<CostOverride> result;
  for (size_t s = 0; s < costs.stages.size(); ++s) {
    const StageCost &c = costs.stages[s];
    auto add = [&](const char *name, double value) {
      CostOverride cost(name, int64_t(s), value + 0.0, CostSource::File);
      cost.origin = "the planner's costs";
      result.push_back(std::move(cost));
    };
    add("F", c.F);
    add("B", c.B);
    add("I", c.I);
    add("W", c.W);
    for (int k = 0; k < kSubOps; ++k) {
      add(kForward[k], c.forwardParts[size_t(k)]);
      add(kBackward[k], c.backwardParts[size_t(k)]);
    }
    add("p2p", c.messageSeconds);
    add("activation_bytes", c.activationBytes);
    // Only a stage with communication sub-ops has SMs to lose to them.
    bool communicates = c.forwardParts[size_t(SubOp::Dispatch)] + c.forwardParts[size_t(SubOp::Combine)] +
                            c.backwardParts[size_t(SubOp::Dispatch)] + c.backwardParts[size_t(SubOp::Combine)] > 0;
    if (communicates && costs.commSmShare > 0)
      add("comm_sm_share", costs.commSmShare);
  }
  return result;
}

std::string costsJson(const PlanCosts &costs) {
  llvm::json::Object object;
  for (const CostOverride &cost : toCostOverrides(costs))
    object[cost.name + "[" + std::to_string(cost.stage) + "]"] = cost.value;
  std::string text;
  llvm::raw_string_ostream out(text);
  out << llvm::formatv("{0:2}", llvm::json::Value(std::move(object))) << "\n";
  return out.str();
}

} // namespace pipec::plan
