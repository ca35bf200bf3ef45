// Parameter counts and FLOPs per layer, as the Hugging Face modelling code
// builds each family's modules (weights, biases, norms), so that totals
// reproduce the published figures.
#include "plan/ModelConfig.h"

#include <algorithm>

namespace pipec::plan {

namespace {

struct Attention {
  double params = 0;       // weights, biases, inner norms
  double weights = 0;      // matmul weights only: 2 x weights FLOPs per token
  double scorePerPosition = 0; // QK^T and AV FLOPs per token per key position
};

Attention attention(const ModelConfig &c) {
  double h = double(c.hiddenSize), a = double(c.numHeads);
  Attention at;
  if (c.usesLatentAttention()) {
    // MLA (DeepSeek-V2 report, §2.1): q through a low-rank latent (or directly),
    // k and v from one compressed latent plus a shared rotary key.
    double qk = double(c.qkNopeHeadDim + c.qkRopeHeadDim), v = double(c.vHeadDim);
    double ql = double(c.qLoraRank), kvl = double(c.kvLoraRank);
    double q = ql > 0 ? h * ql + ql * a * qk : h * a * qk;
    double kv = h * (kvl + double(c.qkRopeHeadDim)) + kvl * a * (double(c.qkNopeHeadDim) + v);
    double out = a * v * h;
    at.weights = q + kv + out;
    at.params = at.weights + ql + kvl; // q_a_layernorm, kv_a_layernorm
    at.scorePerPosition = 2 * a * qk + 2 * a * v;
    return at;
  }
  double d = double(c.headDim), kv = double(c.numKvHeads);
  at.weights = h * a * d + 2 * h * kv * d + a * d * h; // q, k, v, o
  at.params = at.weights;
  if (c.biases)
    at.params += a * d + 2 * kv * d + h;
  else if (c.qkvBias)
    at.params += a * d + 2 * kv * d;
  if (c.qkNorm)
    at.params += 2 * d; // q_norm and k_norm: one head_dim weight each, shared by the heads
  at.scorePerPosition = 4 * a * d; // 4h for multi-head attention
  return at;
}

struct Mlp {
  double params = 0, expertParams = 0, activeParams = 0, activeWeights = 0;
};

double mlpWeights(const ModelConfig &c, double width) {
  return (c.gatedMlp ? 3 : 2) * double(c.hiddenSize) * width;
}

Mlp denseMlp(const ModelConfig &c) {
  Mlp m;
  m.activeWeights = mlpWeights(c, double(c.intermediateSize));
  m.params = m.activeWeights + (c.biases ? double(c.intermediateSize + c.hiddenSize) : 0);
  m.activeParams = m.params;
  return m;
}

Mlp moeMlp(const ModelConfig &c) {
  double expert = mlpWeights(c, double(c.moeIntermediateSize));
  double router = double(c.hiddenSize) * double(c.routedExperts);
  double routerBias = c.family == ModelFamily::DeepSeekV3 ? double(c.routedExperts) : 0; // e_score_correction_bias
  double shared = double(c.sharedExperts) * expert;
  Mlp m;
  m.expertParams = double(c.routedExperts) * expert;
  m.params = m.expertParams + shared + router + routerBias;
  m.activeWeights = double(c.expertsPerToken) * expert + shared + router;
  m.activeParams = m.activeWeights + routerBias;
  return m;
}

double norm(const ModelConfig &c) { return double(c.hiddenSize) * (c.biases ? 2 : 1); }

LayerSpec transformerLayer(const ModelConfig &c, bool moe) {
  Attention at = attention(c);
  Mlp m = moe ? moeMlp(c) : denseMlp(c);
  LayerSpec layer;
  layer.kind = moe ? LayerKind::Moe : LayerKind::Dense;
  layer.params = at.params + m.params + 2 * norm(c);
  layer.storedParams = layer.params;
  layer.expertParams = m.expertParams;
  layer.activeParams = at.params + m.activeParams + 2 * norm(c);
  layer.attentionFlopsPerToken = 2 * at.weights;
  layer.attentionScoreFlopsPerTokenPerPosition = at.scorePerPosition;
  layer.mlpFlopsPerToken = 2 * m.activeWeights;
  layer.routedCopiesPerToken = moe ? c.expertsPerToken : 0;
  return layer;
}

} // namespace

ModelLayers buildLayers(const ModelConfig &c, int64_t mtpModules) {
  double h = double(c.hiddenSize), vocab = double(c.vocabSize);
  ModelLayers model;
  LayerSpec embedding;
  embedding.kind = LayerKind::Embedding;
  embedding.params = vocab * h + double(c.maxPositions) * h; // token (+ learned position) table
  embedding.storedParams = embedding.activeParams = embedding.params;
  model.layers.push_back(embedding);

  for (int64_t l = 0; l < c.numLayers; ++l)
    model.layers.push_back(transformerLayer(c, c.isMoeLayer(l)));

  LayerSpec head;
  head.kind = LayerKind::Head;
  double projection = vocab * h;
  head.params = norm(c) + (c.tiedEmbeddings ? 0 : projection); // final norm + lm_head
  head.storedParams = norm(c) + projection; // a tied head's stage keeps its own copy
  head.activeParams = head.params;
  head.mlpFlopsPerToken = 2 * projection;
  model.layers.push_back(head);

  for (const LayerSpec &layer : model.layers) {
    model.totalParams += layer.params;
    model.activeParams += layer.activeParams;
    if (layer.kind != LayerKind::Embedding)
      model.activeNonEmbeddingParams += layer.activeParams;
  }
  // A multi-token prediction module (DeepSeek-V3 report, §2.2): two norms, a
  // 2h -> h projection and one transformer layer; the checkpoint stores its own
  // copies of the embedding and the output head (with its norm).
  if (c.nextnPredictLayers > 0) {
    LayerSpec block = transformerLayer(c, c.isMoeLayer(c.numLayers));
    double module = 2 * h + 2 * h * h + block.params + vocab * h + norm(c) + vocab * h;
    model.mtpParams = double(c.nextnPredictLayers) * module;
  }
  model.totalWithMtpParams = model.totalParams + model.mtpParams;
  // The modules training runs, before the head (on the last stage). Their
  // parameters count in no total above: stored only.
  const LayerSpec mainHead = model.layers.back();
  model.layers.pop_back();
  for (int64_t i = 0; i < mtpModules; ++i) {
    LayerSpec block = transformerLayer(c, c.isMoeLayer(c.numLayers));
    double projection = 2 * h * h; // eh_proj: [embedding; hidden] -> hidden
    block.storedParams += projection + 2 * h; // and enorm, hnorm
    block.params = block.activeParams = 0;
    block.attentionFlopsPerToken += 2 * projection;
    model.layers.push_back(block);
    LayerSpec head;
    head.kind = LayerKind::Head;
    // shared_head.norm, and for the first module the copy of the embedding
    // that the modules' input needs on this stage (a tied head is that copy).
    head.storedParams = norm(c) + (i == 0 && !c.tiedEmbeddings ? vocab * h : 0);
    head.mlpFlopsPerToken = 2 * vocab * h; // the shared output layer's logits for its own loss
    model.layers.push_back(head);
  }
  model.mtpModules = std::max<int64_t>(0, mtpModules);
  model.layers.push_back(mainHead);
  return model;
}

double ModelLayers::forwardFlops(size_t first, size_t last, int64_t batch, int64_t seq) const {
  double tokens = double(batch) * double(seq), flops = 0;
  for (size_t i = first; i < last && i < layers.size(); ++i) {
    const LayerSpec &layer = layers[i];
    flops += tokens * (layer.attentionFlopsPerToken + layer.mlpFlopsPerToken +
                       layer.attentionScoreFlopsPerTokenPerPosition * double(seq));
  }
  return flops;
}

} // namespace pipec::plan
