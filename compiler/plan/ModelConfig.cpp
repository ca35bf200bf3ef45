#include "plan/ModelConfig.h"

#include "plan/JsonFields.h"

#include "llvm/ADT/StringSwitch.h"

namespace pipec::plan {

namespace {

// Bounds well past any real model, so a typo (or an attack) is an error
// before it becomes a trillion-entry layer list.
constexpr int64_t kMaxWidth = int64_t(1) << 20;   // hidden, intermediate, head dims, ranks
constexpr int64_t kMaxLayers = 100000;
constexpr int64_t kMaxVocab = int64_t(1) << 24;
constexpr int64_t kMaxHeads = 1 << 16;
constexpr int64_t kMaxExperts = 1 << 16;
constexpr int64_t kMaxPositions = int64_t(1) << 24;

std::optional<ModelFamily> familyOf(llvm::StringRef modelType) {
  return llvm::StringSwitch<std::optional<ModelFamily>>(modelType)
      .Case("gpt2", ModelFamily::Gpt2)
      .Case("llama", ModelFamily::Llama)
      .Case("mistral", ModelFamily::Mistral)
      .Case("qwen2", ModelFamily::Qwen2)
      .Case("mixtral", ModelFamily::Mixtral)
      .Case("deepseek_v2", ModelFamily::DeepSeekV2)
      .Case("deepseek_v3", ModelFamily::DeepSeekV3)
      .Case("qwen3_moe", ModelFamily::Qwen3Moe)
      .Default(std::nullopt);
}

void readGpt2(JsonFields &f, ModelConfig &c) {
  c.hiddenSize = f.integer("n_embd", 1, kMaxWidth);
  c.numLayers = f.integer("n_layer", 1, kMaxLayers);
  c.numHeads = f.integer("n_head", 1, kMaxHeads);
  c.vocabSize = f.integer("vocab_size", 1, kMaxVocab);
  c.maxPositions = f.integer("n_positions", 1, kMaxPositions);
  c.intermediateSize = f.integer("n_inner", 1, kMaxWidth, 4 * c.hiddenSize);
  c.tiedEmbeddings = f.boolean("tie_word_embeddings", true);
  c.numKvHeads = c.numHeads;
  c.gatedMlp = false;
  c.biases = true;
  c.dropout = true;
}

// The transformer's shape, under the names Llama-style and DeepSeek configs share.
void readTransformerShape(JsonFields &f, ModelConfig &c) {
  c.hiddenSize = f.integer("hidden_size", 1, kMaxWidth);
  c.intermediateSize = f.integer("intermediate_size", 1, kMaxWidth);
  c.numLayers = f.integer("num_hidden_layers", 1, kMaxLayers);
  c.numHeads = f.integer("num_attention_heads", 1, kMaxHeads);
  c.numKvHeads = f.integer("num_key_value_heads", 1, kMaxHeads, c.numHeads);
  c.vocabSize = f.integer("vocab_size", 1, kMaxVocab);
  c.tiedEmbeddings = f.boolean("tie_word_embeddings", false);
}

// Llama, Mistral, Qwen2 and Mixtral share these names.
void readLlamaLike(JsonFields &f, ModelConfig &c) {
  readTransformerShape(f, c);
  if (f.has("head_dim"))
    c.headDim = f.integer("head_dim", 1, kMaxWidth);
  c.qkvBias = c.family == ModelFamily::Qwen2;
}

void readDeepSeek(JsonFields &f, ModelConfig &c) {
  readTransformerShape(f, c);
  c.qLoraRank = f.integer("q_lora_rank", 1, kMaxWidth, 0); // null: q projected directly
  c.kvLoraRank = f.integer("kv_lora_rank", 1, kMaxWidth);
  c.qkNopeHeadDim = f.integer("qk_nope_head_dim", 1, kMaxWidth);
  c.qkRopeHeadDim = f.integer("qk_rope_head_dim", 1, kMaxWidth);
  c.vHeadDim = f.integer("v_head_dim", 1, kMaxWidth);
  c.headDim = c.qkNopeHeadDim + c.qkRopeHeadDim;
  c.routedExperts = f.integer("n_routed_experts", 1, kMaxExperts, 0); // null: dense
  if (c.routedExperts > 0) {
    c.sharedExperts = f.integer("n_shared_experts", 0, kMaxExperts, 0);
    c.expertsPerToken = f.integer("num_experts_per_tok", 1, c.routedExperts);
    c.moeIntermediateSize = f.integer("moe_intermediate_size", 1, kMaxWidth);
    c.firstDenseLayers = f.integer("first_k_dense_replace", 0, c.numLayers, 0);
    c.moeLayerFrequency = f.integer("moe_layer_freq", 1, kMaxLayers, 1);
    // Group-limited routing (DeepSeek-V2 §2.1.3 device-limited, V3 §2.1.2
    // node-limited): experts in n_group groups, each token's top-k taken
    // from at most topk_group of them.
    c.expertGroups = f.integer("n_group", 1, c.routedExperts, 1);
    c.expertGroupsPerToken = f.integer("topk_group", 1, c.expertGroups, c.expertGroups);
  }
  c.nextnPredictLayers = f.integer("num_nextn_predict_layers", 0, 64, 0);
}

// Qwen3-MoE (transformers' Qwen3MoeConfig): Llama's names, head_dim given,
// no q/k/v biases (attention_bias false), a q and a k RMSNorm per head, and
// num_experts experts of moe_intermediate_size without shared experts.
// Layers are MoE when (i + 1) % decoder_sparse_step == 0 and i is not in
// mlp_only_layers; every released Qwen3-MoE model has step 1 and none listed,
// and only that is read (anything else is refused, naming the field).
void readQwen3Moe(JsonFields &f, const llvm::json::Object &object, ModelConfig &c) {
  readLlamaLike(f, c);
  if (f.boolean("attention_bias", false))
    f.fail("attention_bias", "is true; pipec reads Qwen3-MoE configs without q/k/v biases (as released)");
  c.qkNorm = true;
  c.routedExperts = f.integer("num_experts", 1, kMaxExperts);
  c.expertsPerToken = f.integer("num_experts_per_tok", 1, c.routedExperts);
  c.moeIntermediateSize = f.integer("moe_intermediate_size", 1, kMaxWidth);
  if (f.integer("decoder_sparse_step", 1, kMaxLayers, 1) != 1)
    f.fail("decoder_sparse_step", "is not 1; pipec reads Qwen3-MoE configs whose every layer is MoE (as released)");
  if (const llvm::json::Value *dense = object.get("mlp_only_layers")) {
    const llvm::json::Array *list = dense->getAsArray();
    if (dense->kind() != llvm::json::Value::Null && (!list || !list->empty()))
      f.fail("mlp_only_layers", "is not empty; pipec reads Qwen3-MoE configs whose every layer is MoE (as released)");
  }
}

} // namespace

llvm::StringRef familyName(ModelFamily family) {
  switch (family) {
  case ModelFamily::Gpt2: return "gpt2";
  case ModelFamily::Llama: return "llama";
  case ModelFamily::Mistral: return "mistral";
  case ModelFamily::Qwen2: return "qwen2";
  case ModelFamily::Mixtral: return "mixtral";
  case ModelFamily::DeepSeekV2: return "deepseek_v2";
  case ModelFamily::DeepSeekV3: return "deepseek_v3";
  case ModelFamily::Qwen3Moe: return "qwen3_moe";
  }
  return "unknown";
}

llvm::StringRef layerKindName(LayerKind kind) {
  switch (kind) {
  case LayerKind::Embedding: return "embedding";
  case LayerKind::Dense: return "dense";
  case LayerKind::Moe: return "moe";
  case LayerKind::Head: return "head";
  }
  return "unknown";
}

bool ModelConfig::isMoeLayer(int64_t layer) const {
  // As the DeepSeek modelling code decides; Mixtral: every layer.
  return routedExperts > 0 && layer >= firstDenseLayers && layer % moeLayerFrequency == 0;
}

std::optional<ModelConfig> parseModelConfig(llvm::StringRef text, llvm::StringRef name,
                                            std::string &error) {
  std::optional<llvm::json::Object> object = parseJsonObject(text, name, error);
  if (!object)
    return std::nullopt;
  JsonFields f(*object, name, error);
  ModelConfig c;
  c.modelType = f.string("model_type");
  if (!f.ok())
    return std::nullopt;
  std::optional<ModelFamily> family = familyOf(c.modelType);
  if (!family) {
    f.fail("model_type", "is '" + c.modelType +
                             "', which pipec does not know; known: gpt2, llama, mistral, qwen2, "
                             "mixtral, deepseek_v2, deepseek_v3, qwen3_moe");
    return std::nullopt;
  }
  c.family = *family;
  switch (c.family) {
  case ModelFamily::Gpt2:
    readGpt2(f, c);
    break;
  case ModelFamily::Llama:
  case ModelFamily::Mistral:
  case ModelFamily::Qwen2:
    readLlamaLike(f, c);
    break;
  case ModelFamily::Mixtral:
    readLlamaLike(f, c);
    c.routedExperts = f.integer("num_local_experts", 1, kMaxExperts);
    c.expertsPerToken = f.integer("num_experts_per_tok", 1, c.routedExperts);
    c.moeIntermediateSize = c.intermediateSize;
    break;
  case ModelFamily::DeepSeekV2:
  case ModelFamily::DeepSeekV3:
    readDeepSeek(f, c);
    break;
  case ModelFamily::Qwen3Moe:
    readQwen3Moe(f, *object, c);
    break;
  }
  if (!f.ok())
    return std::nullopt;
  // Shapes the layers cannot have.
  if (c.headDim == 0) {
    if (c.hiddenSize % c.numHeads != 0) {
      f.fail(c.family == ModelFamily::Gpt2 ? "n_head" : "num_attention_heads",
             "is " + std::to_string(c.numHeads) + ", which does not divide the hidden size " +
                 std::to_string(c.hiddenSize) + " (and there is no head_dim)");
      return std::nullopt;
    }
    c.headDim = c.hiddenSize / c.numHeads;
  }
  if (!c.usesLatentAttention() && c.numHeads % c.numKvHeads != 0) {
    f.fail("num_key_value_heads", "is " + std::to_string(c.numKvHeads) +
                                      ", which does not divide num_attention_heads " +
                                      std::to_string(c.numHeads));
    return std::nullopt;
  }
  return c;
}

std::optional<ModelConfig> readModelConfig(llvm::StringRef path, std::string &error) {
  std::optional<std::string> text = readTextFile(path, error);
  if (!text)
    return std::nullopt;
  return parseModelConfig(*text, path, error);
}

} // namespace pipec::plan
