// A transformer layer, the embedding and the head as their operations and
// collectives on one GPU (LayerTimes.h); the expert all-to-all placement.
#include "plan/LayerTimes.h"

#include "plan/OpTimeModel.h"
#include "plan/StageCosts.h"
#include "plan/TpOverlap.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace pipec::plan {

namespace {

// A weight of `in` x `out` (already split by tensor parallelism) applied to T tokens.
struct Weight {
  double in, out;
};

struct Gemms {
  double forward = 0, inputGrad = 0, weightGrad = 0;
  std::vector<double> forwardEach, inputGradEach; // for overlap with TP collectives
  // What was timed, for the TP overlap's split matmuls (empty for the experts).
  std::vector<Weight> weights;
  double tokens = 0;
  bool fp8 = false;
};

Gemms gemms(const Cluster &c, double tokens, const std::vector<Weight> &weights, bool fp8) {
  Gemms g;
  g.weights = weights;
  g.tokens = tokens;
  g.fp8 = fp8;
  for (const Weight &w : weights) {
    double f = gemmSeconds(c, tokens, w.out, w.in, fp8);
    double d = gemmSeconds(c, tokens, w.in, w.out, fp8);
    if (fp8 && c.peakFlopsFp8 > 0) {
      f += fp8CastSeconds(c, tokens * w.in);  // the input activation
      d += fp8CastSeconds(c, tokens * w.out); // the output's gradient
    }
    g.forward += f;
    g.inputGrad += d;
    g.weightGrad += gemmSeconds(c, w.in, w.out, tokens, fp8);
    g.forwardEach.push_back(f);
    g.inputGradEach.push_back(d);
  }
  return g;
}

double exposed(double comm, double compute) { return std::max(0.0, comm - compute); }

} // namespace

ExpertPlacement expertPlacement(const Cluster &cluster, const Training &training, int64_t ep) {
  ExpertPlacement p;
  p.ep = ep;
  // Members of an expert-parallel group are t x cp GPUs apart.
  int64_t stride = training.modelParallelGpus();
  int64_t perNode = std::max<int64_t>(1, cluster.gpusPerNode / std::max<int64_t>(1, stride));
  p.gpusPerNode = std::min(ep, perNode);
  p.nodes = (ep + p.gpusPerNode - 1) / p.gpusPerNode;
  return p;
}

double distinctNodesPerToken(const ModelConfig &m, const ExpertPlacement &p, double k, bool deduplicated) {
  double n = double(p.nodes);
  if (p.nodes <= 1 || k <= 0)
    return 0;
  // k experts spread evenly over n nodes touch n (1 - (1 - 1/n)^k) of them.
  auto spread = [](double nodes, double copies) { return nodes * (1 - std::pow(1 - 1 / nodes, copies)); };
  double free = spread(n, k);
  double groups = double(m.expertGroups), chosen = double(m.expertGroupsPerToken);
  bool limited = m.expertGroupsPerToken < m.expertGroups;
  // Group-limited routing (DeepSeek-V3 §2.1.2, §3.2.2): a token's experts lie
  // in `chosen` of the groups. Experts are numbered in groups and placed on
  // the nodes in order, so a group spans n / groups nodes, or a node holds
  // groups / n groups.
  if (limited && p.nodes % m.expertGroups == 0) {
    // Each chosen group gets k / chosen of the experts, over its r nodes.
    double r = n / groups;
    return std::min(free, chosen * spread(r, k / chosen));
  }
  if (limited && m.expertGroups % p.nodes == 0)
    return std::min(free, spread(n, chosen)); // the chosen groups' nodes
  return deduplicated ? free : 0;
}

double allToAllSeconds(const Cluster &c, const ExpertPlacement &p, double tokens, double k, double bytesPerCopy,
                       double distinctNodes, double &offGpuBytes) {
  offGpuBytes = 0;
  if (p.ep <= 1 || tokens <= 0 || k <= 0)
    return 0;
  double ep = double(p.ep), nodes = double(p.nodes), g = double(p.gpusPerNode);
  double copies = tokens * k * bytesPerCopy;
  // Every copy for another GPU of the group crosses NVLink at some point: sent
  // there directly, or forwarded from the node's receiving GPU.
  double intra = copies * (1 - 1 / ep);
  offGpuBytes = intra;
  if (p.nodes <= 1)
    return c.intraNodeLatency + intra / c.busBandwidth(true);
  double inter, network = c.busBandwidth(false);
  if (distinctNodes > 0) {
    // Deduplicated: one copy per distinct node a token's experts are on; the
    // share (n-1)/n of those nodes are remote. Its kernels reach a larger share
    // of the link than NCCL's collectives (Cluster.h).
    inter = tokens * bytesPerCopy * distinctNodes * (nodes - 1) / nodes;
    network = c.interNodeBandwidth * c.dispatchNetworkEfficiency;
  } else {
    inter = copies * (nodes - 1) / nodes;
    intra = copies * (g - 1) / ep;
  }
  // NVLink and the network work at once; the slower one bounds the exchange.
  return c.interNodeLatency + std::max(inter / network, intra / c.busBandwidth(true));
}

LayerTime layerTime(const ModelConfig &m, LayerKind kind, const Cluster &c, const Training &tr,
                    int64_t expertParallel) {
  LayerTime r;
  const double t = double(tr.tensorParallel), cp = double(tr.contextParallel);
  const double b = double(tr.microBatch), s = double(tr.sequenceLength);
  const double e = bytesOf(tr.activationType), h = double(m.hiddenSize), a = double(m.numHeads);
  const double T = b * s / cp; // tokens in this GPU's GEMMs (sequence parallelism gathers them)
  const bool fp8 = tr.precision == Precision::FP8;
  const bool sp = tr.sequenceParallel && tr.tensorParallel > 1;
  // Norms, residual adds and dropouts run on T / t tokens with sequence
  // parallelism; without it every tensor-parallel rank repeats them.
  const double spDiv = sp ? t : 1;
  const bool tpInNode = tr.tensorParallel <= c.gpusPerNode;
  const double collective = T * h * e; // one all-gather or reduce-scatter's whole tensor
  const double half =
      reduceScatterSeconds(collective, tr.tensorParallel, c.busBandwidth(tpInNode), c.latency(tpInNode));

  if (kind == LayerKind::Embedding) {
    // Row gather (and learned positions), written out; the backward
    // scatter-adds the gradients into the table.
    double rows = m.maxPositions > 0 ? 2 : 1;
    r.mlpForward = memoryBoundSeconds(c, T * (rows + 1) * h * e / spDiv);
    r.mlpInputGrad = 0;
    r.mlpWeightGrad = memoryBoundSeconds(c, 2 * T * rows * h * e / spDiv);
    // Vocabulary-parallel embedding: its output is reduce-scattered (or all-reduced).
    r.tpMlpForward = half;
    r.tpMlpBackward = sp ? half : 0;
    return r;
  }
  if (kind == LayerKind::Head) {
    double V = double(m.vocabSize);
    Gemms g = gemms(c, T, {{h, V / t}}, false); // the output layer stays BF16 in FP8 recipes
    double norm = 4 * T * h * e / spDiv;
    // Vocabulary-parallel cross-entropy in fp32, as Megatron-Core runs it
    // (tensor_parallel/cross_entropy.py; the fused path of
    // fusions/fused_cross_entropy.py jit-fuses each step below into one
    // kernel, the unfused path takes more passes): the forward casts the
    // logits to fp32 (read e, write 4; the max fused), subtracts the max and
    // exponentiates in place (read 4, write 4; the sum fused), and divides by
    // the sum into the softmax it keeps (read 4, write 4); the backward
    // scales the softmax by the loss gradient in place (read 4, write 4) and
    // casts it back for the projection's backward (read 4, write e).
    double logits = T * (V / t);
    double lossForward = logits * (e + 5 * 4);
    double lossBackward = logits * (3 * 4 + e);
    r.mlpForward = g.forward + memoryBoundSeconds(c, norm + lossForward);
    r.mlpInputGrad = g.inputGrad + memoryBoundSeconds(c, 2 * norm + lossBackward);
    r.mlpWeightGrad = g.weightGrad;
    r.tpMlpForward = sp ? half : 0;  // gather the sequence before the projection
    r.tpMlpBackward = sp ? half : 0; // reduce-scatter its gradient
    return r;
  }

  // Attention projections.
  std::vector<Weight> attention;
  double dqk, dv, kvWidth, ropeWidth;
  if (m.usesLatentAttention()) {
    double qk = double(m.qkNopeHeadDim + m.qkRopeHeadDim), v = double(m.vHeadDim);
    double ql = double(m.qLoraRank), kvl = double(m.kvLoraRank), rope = double(m.qkRopeHeadDim);
    if (ql > 0) {
      attention.push_back({h, ql}); // down-projections are not split (Megatron MLA)
      attention.push_back({ql, a * qk / t});
    } else {
      attention.push_back({h, a * qk / t});
    }
    attention.push_back({h, kvl + rope});
    attention.push_back({kvl, a * (double(m.qkNopeHeadDim) + v) / t});
    attention.push_back({a * v / t, h});
    dqk = qk;
    dv = v;
    kvWidth = a * (qk + v) / t; // K and V as ring attention exchanges them
    ropeWidth = 2 * a * rope / t;
  } else {
    double d = double(m.headDim), kv = double(m.numKvHeads);
    attention.push_back({h, (a + 2 * kv) * d / t});
    attention.push_back({a * d / t, h});
    dqk = dv = d;
    kvWidth = 2 * kv * d / t;
    ropeWidth = m.family == ModelFamily::Gpt2 ? 0 : (a + kv) * d / t; // rotary on q and k
  }
  Gemms ag = gemms(c, T, attention, fp8);
  double headsHere = b * a / t;
  double coreForward, coreBackward;
  if (tr.attention == AttentionKernel::Flash) {
    coreForward = flashForwardSeconds(c, headsHere, s / cp, s, dqk, dv, true);
    coreBackward = flashBackwardSeconds(c, headsHere, s / cp, s, dqk, dv, true);
  } else {
    // Eager: the full score matrix by batched matmuls, then softmax (and
    // dropout) over it in memory; the backward twice each.
    double flops = 2 * headsHere * (s / cp) * s * (dqk + dv);
    double scores = headsHere * (s / cp) * s * (3 * e + (m.dropout ? 2 * e + 1 : 0));
    coreForward = flops / (c.peakFlops * c.matmulEfficiency) + memoryBoundSeconds(c, scores);
    coreBackward = 2 * coreForward;
  }
  // Norm (read, write), residual add (two reads, a write), rotary (read, write).
  double attentionElementwise = T * e * (7 * h / spDiv + 2 * ropeWidth);
  r.attentionForward = ag.forward + coreForward + memoryBoundSeconds(c, attentionElementwise);
  r.attentionInputGrad = ag.inputGrad + coreBackward + memoryBoundSeconds(c, 2 * attentionElementwise);
  r.attentionWeightGrad = ag.weightGrad;

  // MLP or experts.
  double gatedFactor = m.gatedMlp ? 3 : 2; // activation: read 2 (gate, up) write 1, or read 1 write 1
  Gemms mg;
  double mlpElementwise = T * e * 7 * h / spDiv;
  if (kind == LayerKind::Moe) {
    double E = double(m.routedExperts), k = double(m.expertsPerToken), i = double(m.moeIntermediateSize);
    double ep = double(expertParallel);
    // Each GPU holds E / ep experts (split by t); with balanced routing each
    // gets T k ep / E tokens of the group.
    double perExpert = T * k * ep / E, localExperts = E / ep;
    double width = m.gatedMlp ? 2 * i / t : i / t;
    Gemms one = gemms(c, perExpert, {{h, width}, {i / t, h}}, fp8);
    mg.forward = localExperts * one.forward;
    mg.inputGrad = localExperts * one.inputGrad;
    mg.weightGrad = localExperts * one.weightGrad;
    if (m.sharedExperts > 0) {
      double S = double(m.sharedExperts);
      Gemms shared = gemms(c, T, {{h, (m.gatedMlp ? 2 : 1) * S * i / t}, {S * i / t, h}}, fp8);
      mg.forward += shared.forward;
      mg.inputGrad += shared.inputGrad;
      mg.weightGrad += shared.weightGrad;
      mlpElementwise += T * e * gatedFactor * S * i / t;
    }
    Gemms router = gemms(c, T, {{h, E}}, false);
    mg.forward += router.forward;
    mg.inputGrad += router.inputGrad;
    mg.weightGrad += router.weightGrad;
    // Permute and unpermute each copy (read and write), the experts' activation,
    // the router's fp32 softmax over E.
    mlpElementwise += T * (4 * k * h * e + k * gatedFactor * i / t * e + 8 * E);
    mg.forwardEach = {mg.forward / 2, mg.forward / 2};
    mg.inputGradEach = {mg.inputGrad / 2, mg.inputGrad / 2};
    // The all-to-alls: the dispatch in FP8 under FP8 training (DeepSeek-V3
    // §3.3), the combine in BF16. Tokens per GPU: the sequence-parallel share.
    ExpertPlacement placement = expertPlacement(c, tr, expertParallel);
    double distinct = distinctNodesPerToken(m, placement, k, tr.epDispatch == EpDispatch::Deduplicated);
    double tokens = T / t, ignored = 0;
    r.dispatch = allToAllSeconds(c, placement, tokens, k, h * (fp8 ? 1 : e), distinct, r.dispatchBytes);
    r.combine = allToAllSeconds(c, placement, tokens, k, h * e, distinct, ignored);
  } else {
    double i = double(m.intermediateSize);
    mg = gemms(c, T, {{h, (m.gatedMlp ? 2 : 1) * i / t}, {i / t, h}}, fp8);
    mlpElementwise += T * e * gatedFactor * i / t;
  }
  r.mlpForward = mg.forward + memoryBoundSeconds(c, mlpElementwise);
  r.mlpInputGrad = mg.inputGrad + memoryBoundSeconds(c, 2 * mlpElementwise);
  r.mlpWeightGrad = mg.weightGrad;

  // Tensor parallelism: with sequence parallelism an all-gather before the
  // first matmul of each half and a reduce-scatter after its last, forward;
  // backward the reverse pair plus the input re-gathered for the weight
  // gradient, which Megatron overlaps with the input-gradient matmul
  // (Korthikanti et al. §4.2.2). Without it, one all-reduce per half each
  // way: the same bytes.
  if (tr.tensorParallel > 1) {
    // Overlapped with sequence parallelism, as Megatron requires for it, a
    // block of exactly two matmuls (multi-head attention's QKV and output
    // projections, the dense MLP) runs Transformer Engine's userbuffers
    // methods (below), which cost the matmuls time; with none of its points
    // overlapped it is not overlapped at all. MLA's down-projections and the
    // experts' grouped matmuls hide each collective behind the matmul it
    // feeds or follows.
    auto runsUserbuffers = [&](const Gemms &g) { return tr.tpCommOverlap && sp && g.weights.size() == 2; };
    auto overlapped = [&](const Gemms &g) {
      return tr.tpCommOverlap && (!runsUserbuffers(g) || overlapsBlock(tr.tpOverlapConfig, &g == &ag));
    };
    auto halfOf = [&](const Gemms &g, bool forward) {
      const std::vector<double> &each = forward ? g.forwardEach : g.inputGradEach;
      double first = each.empty() ? 0 : each.front(), last = each.empty() ? 0 : each.back();
      double regather = sp && !forward ? exposed(half, first) : 0;
      if (overlapped(g))
        return exposed(half, first) + exposed(half, last) + regather;
      return 2 * half + regather;
    };
    r.tpAttentionForward = halfOf(ag, true);
    r.tpMlpForward = halfOf(mg, true);
    r.tpAttentionBackward = halfOf(ag, false);
    r.tpMlpBackward = halfOf(mg, false);
    auto userbuffers = [&](const Gemms &g, double &forward, double &inputGrad, double &weightGrad,
                           double &tpForward, double &tpBackward) {
      if (!runsUserbuffers(g) || !overlapped(g))
        return;
      TpBlock block{g.tokens, g.weights[0].in, g.weights[0].out, g.weights[1].in, g.weights[1].out, g.fp8,
                    &g == &ag};
      TpOverlapCost o = userbufferOverlap(c, tr, block, collective, tpInNode);
      forward += o.forwardCompute;
      inputGrad += o.inputGradCompute;
      weightGrad += o.weightGradCompute;
      tpForward = o.forwardExposed;
      tpBackward = o.backwardExposed;
    };
    userbuffers(ag, r.attentionForward, r.attentionInputGrad, r.attentionWeightGrad, r.tpAttentionForward,
                r.tpAttentionBackward);
    userbuffers(mg, r.mlpForward, r.mlpInputGrad, r.mlpWeightGrad, r.tpMlpForward, r.tpMlpBackward);
  }

  // Context parallelism (ring attention, Megatron's load-balanced causal
  // split): cp - 1 steps, each passing this chunk's K and V to the next GPU
  // while the attention of the current chunk runs; the backward passes K, V
  // and their gradients.
  if (tr.contextParallel > 1) {
    bool cpInNode = tr.modelParallelGpus() <= c.gpusPerNode;
    double kvBytes = b * (s / cp) * kvWidth * e;
    double step = messageSeconds(kvBytes, c.busBandwidth(cpInNode), c.latency(cpInNode));
    double backStep = messageSeconds(2 * kvBytes, c.busBandwidth(cpInNode), c.latency(cpInNode));
    r.cpForward = (cp - 1) * exposed(step, coreForward / cp);
    r.cpBackward = (cp - 1) * exposed(backStep, coreBackward / cp);
  }

  // Recomputation replays before the backward: the attention core
  // (selective; FlashAttention already recomputes it inside its backward) or
  // the whole forward (full).
  if (tr.recompute == Recompute::Selective && tr.attention == AttentionKernel::Eager)
    r.replayAttention = coreForward;
  // DeepSeek-V3's selective recomputation (§3.2.3; ActivationMemory.cpp drops
  // what it rebuilds): the backward replays the RMSNorms (the two layer norms
  // and MLA's latent norms: read and write), the MLA up-projections (the
  // forward GEMMs from the latents) and the experts' SwiGLU (read gate and up,
  // write the output).
  if (tr.recompute == Recompute::Selective && m.usesLatentAttention()) {
    double latents = double(m.qLoraRank) + double(m.kvLoraRank);
    double norms = 2 * T * e * (2 * h / spDiv + latents);
    double upProjections = m.qLoraRank > 0 ? ag.forwardEach[1] + ag.forwardEach[3] : ag.forwardEach[2];
    r.replayAttention += upProjections + memoryBoundSeconds(c, norms);
    if (kind == LayerKind::Moe) {
      double k = double(m.expertsPerToken), i = double(m.moeIntermediateSize);
      // The GPU's E / ep experts get T k ep / E tokens each: T k copies.
      double swiglu = T * e * 3 * (k + double(m.sharedExperts)) * i / t;
      r.replayMlp += memoryBoundSeconds(c, swiglu);
    }
  }
  if (tr.recompute == Recompute::Full) {
    r.replayAttention = r.attentionForward;
    r.replayMlp = r.mlpForward;
    r.replayTp = r.tpAttentionForward + r.tpMlpForward;
    r.replayCp = r.cpForward;
    r.replayAllToAll = r.dispatch + r.combine;
  }
  return r;
}

std::array<LayerTime, 4> layerTimesByKind(const ModelConfig &config, const Cluster &cluster,
                                          const Training &training, int64_t expertParallel) {
  std::array<LayerTime, 4> kinds{};
  for (LayerKind kind : {LayerKind::Embedding, LayerKind::Dense, LayerKind::Moe, LayerKind::Head})
    if (kind != LayerKind::Moe || config.isMoe())
      kinds[size_t(kind)] = layerTime(config, kind, cluster, training, expertParallel);
  return kinds;
}

double layerComputeSeconds(const LayerTime &t) {
  return t.attentionForward + t.mlpForward + t.attentionInputGrad + t.mlpInputGrad + t.attentionWeightGrad +
         t.mlpWeightGrad + t.replayAttention + t.replayMlp;
}

} // namespace pipec::plan
