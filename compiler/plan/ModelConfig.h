// A model as the planner sees it: read from a Hugging Face `config.json`
// (Llama, Mistral, Qwen2, Mixtral, DeepSeek-V2/V3, GPT-2 families) and laid out
// as a sequence of layers (embedding, transformer layers, head) whose parameter
// counts and FLOPs give each pipeline stage its costs.
#pragma once

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipec::plan {

enum class ModelFamily { Gpt2, Llama, Mistral, Qwen2, Mixtral, DeepSeekV2, DeepSeekV3, Qwen3Moe };

// "gpt2", "llama", ...: the canonical model_type of a family.
llvm::StringRef familyName(ModelFamily family);

// What config.json says, with each family's defaults filled in. Counts are
// int64_t; 0 means "absent" for the optional parts (MoE, MLA, MTP).
struct ModelConfig {
  std::string modelType; // as written in the file
  ModelFamily family = ModelFamily::Llama;

  int64_t hiddenSize = 0;       // h
  int64_t numLayers = 0;        // L, main model only (MTP layers apart)
  int64_t numHeads = 0;         // a
  int64_t numKvHeads = 0;       // GQA key/value heads (= a for MHA)
  int64_t headDim = 0;          // per head (h / a unless config says head_dim)
  int64_t intermediateSize = 0; // dense MLP width (4h for GPT-2 unless n_inner)
  int64_t vocabSize = 0;
  int64_t maxPositions = 0;     // learned position table rows (GPT-2), else 0
  bool tiedEmbeddings = false;  // head shares the embedding matrix
  bool gatedMlp = true;         // SwiGLU: gate, up, down projections
  bool biases = false;          // GPT-2: every linear and norm has a bias
  bool qkvBias = false;         // Qwen2: biases on q, k, v only
  bool qkNorm = false;          // Qwen3: RMSNorm of each head's q and k (head_dim weights each)
  bool dropout = false;         // GPT-2 style dropout masks (activation memory)

  // Mixture of experts (Mixtral, DeepSeek). routedExperts == 0: dense model.
  int64_t routedExperts = 0;
  int64_t sharedExperts = 0;
  int64_t expertsPerToken = 0;      // top-k
  int64_t moeIntermediateSize = 0;  // per expert (Mixtral: intermediate_size)
  int64_t firstDenseLayers = 0;     // first_k_dense_replace
  int64_t moeLayerFrequency = 1;    // moe_layer_freq: every n-th layer after those is MoE
  int64_t expertGroups = 1;         // n_group: routing groups (DeepSeek)
  int64_t expertGroupsPerToken = 1; // topk_group: groups one token may reach (= expertGroups: no limit)

  // Multi-head latent attention (DeepSeek). kvLoraRank == 0: plain (GQA) attention.
  int64_t qLoraRank = 0;            // 0: q is projected directly (DeepSeek-V2-Lite)
  int64_t kvLoraRank = 0;
  int64_t qkNopeHeadDim = 0;
  int64_t qkRopeHeadDim = 0;
  int64_t vHeadDim = 0;

  int64_t nextnPredictLayers = 0;   // multi-token prediction modules (excluded from the main model)

  bool isMoe() const { return routedExperts > 0; }
  bool usesLatentAttention() const { return kvLoraRank > 0; }
  // Whether transformer layer `layer` (0-based) has an MoE MLP.
  bool isMoeLayer(int64_t layer) const;
};

// Parses config.json text; `name` is the file name for messages. nullopt with
// `error` set ("config.json: field 'hidden_size' ...") on any problem.
std::optional<ModelConfig> parseModelConfig(llvm::StringRef text, llvm::StringRef name,
                                            std::string &error);
// Reads and parses a config.json (at most the 12 MiB input limit).
std::optional<ModelConfig> readModelConfig(llvm::StringRef path, std::string &error);

enum class LayerKind { Embedding, Dense, Moe, Head };
llvm::StringRef layerKindName(LayerKind kind); // "embedding", "dense", "moe", "head"

// One layer of the model. FLOPs are forward FLOPs for one token, split as the
// cost model's sub-operations split a chunk: attention (projections, plus the
// s^2 score term per unit of sequence length) and MLP (router, experts, head).
struct LayerSpec {
  LayerKind kind = LayerKind::Dense;
  double params = 0;          // counted in the model total (0 for a tied head)
  double storedParams = 0;    // held by the stage that has the layer (a tied head keeps a copy)
  double expertParams = 0;    // of storedParams, those split over expert parallelism
  double activeParams = 0;    // those a token uses (top-k experts only)
  double attentionFlopsPerToken = 0; // 2 x attention projection weights
  double attentionScoreFlopsPerTokenPerPosition = 0; // x s: QK^T and AV, 2+2 x a x head dims
  double mlpFlopsPerToken = 0;       // 2 x active MLP weights (router, experts, head)
  // Tokens' hidden states an MoE layer's dispatch and combine move, per token: k (0 if dense).
  int64_t routedCopiesPerToken = 0;
};

// The model as layers: [embedding, layer 0 .. L-1, head], with the
// multi-token prediction modules that training runs (buildLayers) before the
// head: each a transformer layer and a second pass through the head.
struct ModelLayers {
  std::vector<LayerSpec> layers;
  int64_t mtpModules = 0;       // MTP modules in `layers`: 2 entries each, on the last stage
  size_t mtpEntries() const { return size_t(2 * mtpModules); }
  // The main model's transformer layers (MTP's apart).
  int64_t transformerLayers() const { return int64_t(layers.size()) - 2 - int64_t(mtpEntries()); }
  double totalParams = 0;       // main model (embedding, layers, head; tied counted once)
  double activeParams = 0;      // per token, main model (embedding table included, as Mixtral counts)
  double activeNonEmbeddingParams = 0; // the same without the embedding lookup (as DeepSeek counts)
  double mtpParams = 0;         // multi-token prediction modules of the config, as a checkpoint stores them
  double totalWithMtpParams = 0;
  // Forward FLOPs of a micro-batch of `batch` sequences of `seq` tokens for layers [first, last).
  double forwardFlops(size_t first, size_t last, int64_t batch, int64_t seq) const;
};

// `mtpModules` multi-token prediction modules (DeepSeek-V3 report, §2.2)
// are trained with the model, each as Megatron-Core runs it on the last
// pipeline stage: its transformer layer (the model's last kind; the 2h -> h
// projection and two norms in its parameters) and the shared output head
// over its hidden states with its own loss (that stage keeps an embedding
// copy for the module's input). The main model's totals leave them out.
ModelLayers buildLayers(const ModelConfig &config, int64_t mtpModules = 0);

} // namespace pipec::plan
