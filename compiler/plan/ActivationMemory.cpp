// Stored activations of one transformer layer for one micro-batch, after
// Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models", §4.1), term by term so that the same accounting covers
// GQA, gated MLPs, MLA and MoE. e is the activation dtype's bytes (2 in the
// paper), masks take 1 byte, everything is divided by t (sequence parallelism
// shards the norms and dropouts too). sb = tokens of the micro-batch.
//
//   norm inputs (two norms)           2 e sb h
//   attention input (shared by q,k,v) e sb h
//   Q, K, V                           e sb (a + 2 kv) d          (GQA: K, V by kv heads)
//   softmax output                    e a s^2 b
//     + dropout mask and output       (1 + e) a s^2 b            (GPT-2 style only)
//   output projection input           e sb a d
//   attention dropout mask            sb h                       (GPT-2 style only)
//   MLP input                         e sb h
//   MLP: GELU                         2 e sb i                   (fc1 output, GELU output)
//        gated (SwiGLU)               3 e sb i                   (gate and up, SwiGLU output)
//   MLP dropout mask                  sb h                       (GPT-2 style only)
// With e = 2, i = 4h, kv = a, d = h/a and dropout this is the paper's
// sbh (34 + 5 a s / h). MLA (DeepSeek-V2 §2.1) stores the latents instead of
// a full-width K, V input: e sb (2 q_lora + 2 kv_lora + rope) for the latents
// and their norms, then Q, K of a (nope + rope) and V of a v_head per token.
// MoE replaces the MLP by: router input e sb h, router probabilities 4 sb E
// (fp32), the k dispatched copies e sb k h, the experts' intermediates
// 3 e sb k i_moe (gated) and shared experts' 3 e sb S i_moe. The k expert
// outputs are not kept: the routing weights are applied inside the experts'
// SwiGLU (Megatron-Core's weighted_bias_swiglu_impl), so the combine's
// backward needs nothing saved. Under FP8 the tensors kept as GEMM
// inputs (attention and MLP inputs, the output projection's and fc2's
// inputs, the dispatched copies) take 1 byte an element; with
// fp8_swiglu_cache (DeepSeek-V3 §3.3.3) so do fc1's outputs.
//
// Selective recomputation drops the s^2 terms (recomputed), and so does
// FlashAttention, the default (--attention flash): it stores only the
// softmax statistics, a s b fp32 values (4 a sb). Full recomputation keeps
// only the layer input, e sb h. Context parallelism splits the sequence: sb
// is the GPU's s b / cp tokens, and an eager s^2 term is (s / cp) s.
#include "plan/StageCosts.h"

namespace pipec::plan {

double korthikantiActivationBytes(double s, double b, double h, double a, double t,
                                  Recompute recompute) {
  switch (recompute) {
  case Recompute::None:
    return s * b * h * (34 + 5 * a * s / h) / t;
  case Recompute::Selective:
    return 34 * s * b * h / t;
  case Recompute::Full:
    return 2 * s * b * h / t;
  }
  return 0;
}

double layerActivationBytes(const ModelConfig &c, LayerKind kind, const Training &training) {
  if (kind != LayerKind::Dense && kind != LayerKind::Moe)
    return 0;
  double e = bytesOf(training.activationType), t = double(training.tensorParallel);
  double cp = double(training.contextParallel);
  double s = double(training.sequenceLength), b = double(training.microBatch), sb = s * b / cp;
  double h = double(c.hiddenSize), a = double(c.numHeads);
  if (training.recompute == Recompute::Full)
    return e * sb * h / t;
  // A GEMM's input kept for its weight gradient: in FP8 training Transformer
  // Engine keeps the FP8 copy it cast for the forward, 1 byte an element.
  double g = training.precision == Precision::FP8 ? 1 : e;

  double linear = 2 * e * sb * h; // the two norms' inputs
  double scores = e * a * (s / cp) * s * b;
  if (c.dropout) {
    scores += (1 + e) * a * (s / cp) * s * b;
    linear += 2 * sb * h; // attention and MLP dropout masks
  }
  // DeepSeek-V3's selective recomputation (§3.2.3; Megatron's recompute
  // modules layernorm, mla_up_proj, moe_act): the norms' outputs, MLA's
  // up-projected Q, K, V and the SwiGLU outputs are rebuilt in the backward,
  // not stored. Applied to MLA models (the recipe it comes from).
  const bool deepseekSelective = training.recompute == Recompute::Selective && c.usesLatentAttention();
  double normOut = deepseekSelective ? 0 : g;
  double activationOut = deepseekSelective ? 0 : g;
  if (c.usesLatentAttention()) {
    double qk = double(c.qkNopeHeadDim + c.qkRopeHeadDim), v = double(c.vHeadDim);
    linear += normOut * sb * h; // input of q_a and kv_a
    linear += e * sb * (2 * double(c.qLoraRank) + 2 * double(c.kvLoraRank) + double(c.qkRopeHeadDim));
    if (!deepseekSelective)
      linear += e * sb * a * (2 * qk + v); // Q, K, V
    linear += g * sb * a * v;            // output projection input
  } else {
    double d = double(c.headDim), kv = double(c.numKvHeads);
    linear += g * sb * h + e * sb * (a + 2 * kv) * d + g * sb * a * d;
  }
  linear += normOut * sb * h; // MLP (or router) input
  // The MLP keeps fc1's output for the activation's backward and the
  // activation's output as fc2's input: GELU i + i; SwiGLU (Megatron's fused
  // kernel) fc1's gate and up, 2i, and its output i.
  // DeepSeek-V3 §3.3.3: its framework caches the SwiGLU inputs in FP8.
  double fc1Bytes = training.fp8SwigluCache ? 1 : e;
  double fc1 = c.gatedMlp ? 2 * fc1Bytes : fc1Bytes;
  if (kind == LayerKind::Moe) {
    double k = double(c.expertsPerToken), i = double(c.moeIntermediateSize);
    linear += 4 * sb * double(c.routedExperts);
    // The k dispatched copies (fc1's input). The expert outputs are not kept:
    // Megatron-Core applies the routing weights inside the experts' SwiGLU
    // (moe/experts.py, weighted_bias_swiglu_impl), so the combine is a plain
    // sum with nothing to save for its backward.
    linear += g * sb * k * h;
    linear += (fc1 + activationOut) * sb * k * i;
    linear += (fc1 + activationOut) * sb * double(c.sharedExperts) * i;
  } else {
    linear += (fc1 + activationOut) * sb * double(c.intermediateSize);
  }
  if (training.recompute == Recompute::Selective)
    scores = 0;
  if (training.attention == AttentionKernel::Flash)
    scores = 4 * a * sb; // the log-sum-exp per query and head, fp32
  // Without sequence parallelism (t > 1) every tensor-parallel rank keeps the
  // whole norm inputs, the two GEMM inputs they feed and the dropout masks:
  // Korthikanti et al.'s sbh (10 + 24 / t + 5 a s / (h t)), the 10 unsharded.
  double replicated = 0;
  if (t > 1 && !training.sequenceParallel)
    replicated = (2 * e + 2 * normOut) * sb * h + (c.dropout ? 2 * sb * h : 0);
  return (linear - replicated + scores) / t + replicated;
}

} // namespace pipec::plan
