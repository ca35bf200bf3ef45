// The planner's model input: Hugging Face configs read and laid out as layers
// whose parameter counts reproduce the published model sizes, and errors that
// name the field and the file.
#include "plan/ModelConfig.h"
#include "plan/Training.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <iterator>
#include <string>

using namespace pipec::plan;

namespace {

std::string input(const std::string &name) { return std::string(PIPEC_PLAN_INPUTS_DIR) + "/hf/" + name; }

ModelLayers layersOf(const std::string &name) {
  std::string error;
  std::optional<ModelConfig> config = readModelConfig(input(name), error);
  INFO(error);
  REQUIRE(config);
  return buildLayers(*config);
}

// Billions, to the published figure's last digit.
double billions(double params) { return params / 1e9; }

std::string errorOf(const std::string &json) {
  std::string error;
  std::optional<ModelConfig> config = parseModelConfig(json, "config.json", error);
  CHECK_FALSE(config);
  return error;
}

const char *kLlama = R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100})";

} // namespace

TEST_CASE("GPT-2 style configs reproduce GPT-2 124M and GPT-3 175B", "[plan]") {
  ModelLayers gpt2 = layersOf("gpt2.json");
  CHECK(gpt2.totalParams == 124439808); // GPT-2 small as PyTorch counts it (tied head once)
  ModelLayers gpt3 = layersOf("gpt3-175b.json");
  CHECK(billions(gpt3.totalParams) == Approx(174.6).margin(0.05));
  CHECK(gpt3.activeParams == gpt3.totalParams);
}

TEST_CASE("Llama, Mistral and Qwen2 counts match their model cards", "[plan]") {
  CHECK(billions(layersOf("llama-2-7b.json").totalParams) == Approx(6.74).margin(0.005));
  CHECK(billions(layersOf("llama-2-70b.json").totalParams) == Approx(68.98).margin(0.005));
  CHECK(billions(layersOf("llama-3-8b.json").totalParams) == Approx(8.03).margin(0.005));
  CHECK(billions(layersOf("mistral-7b.json").totalParams) == Approx(7.24).margin(0.005));
  CHECK(billions(layersOf("qwen2-7b.json").totalParams) == Approx(7.62).margin(0.005));
  // Exact, from the modules' shapes: Llama-2-7B has 6,738,415,616 parameters.
  CHECK(layersOf("llama-2-7b.json").totalParams == 6738415616);
}

TEST_CASE("Mixtral counts all experts in total and two per token in active", "[plan]") {
  ModelLayers mixtral = layersOf("mixtral-8x7b.json");
  CHECK(billions(mixtral.totalParams) == Approx(46.7).margin(0.05));
  CHECK(billions(mixtral.activeParams) == Approx(12.9).margin(0.05)); // the embedding table included
  CHECK(mixtral.layers[1].kind == LayerKind::Moe);
  CHECK(mixtral.layers[1].routedCopiesPerToken == 2);
}

TEST_CASE("Qwen3-MoE: per-head q/k norms, 128 experts without shared ones; the model cards' sizes", "[plan]") {
  // Model cards: 30.5B total, 3.3B activated, 29.9B non-embedding; 235B, 22B, 234B.
  ModelLayers small = layersOf("qwen3-30b-a3b.json");
  CHECK(billions(small.totalParams) == Approx(30.53).margin(0.005));
  CHECK(billions(small.activeParams) == Approx(3.35).margin(0.005));
  ModelLayers large = layersOf("qwen3-235b-a22b.json");
  CHECK(billions(large.totalParams) == Approx(235.09).margin(0.005));
  CHECK(billions(large.activeParams) == Approx(22.19).margin(0.005));
  // Exact, from the modules' shapes (untied embeddings, head_dim 128 apart
  // from hidden / heads = 64): q 2048 x 4096, k and v 2048 x 512 each, o 4096 x
  // 2048, q_norm and k_norm 128 each, two layer norms, the router 2048 x 128
  // and 128 SwiGLU experts of 3 x 2048 x 768.
  const LayerSpec &layer = small.layers[1];
  CHECK(layer.kind == LayerKind::Moe);
  CHECK(layer.routedCopiesPerToken == 8);
  CHECK(layer.params == 2048.0 * 4096 + 2 * 2048.0 * 512 + 4096.0 * 2048 + 2 * 128 + 2 * 2048 + 2048.0 * 128 +
                            128 * 3 * 2048.0 * 768);
  CHECK(layer.expertParams == 128 * 3 * 2048.0 * 768);
  // Configs the reader does not cover are refused, naming the field.
  std::string base = R"("model_type": "qwen3_moe", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100,
    "head_dim": 32, "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32)";
  for (auto [extra, field] : {std::pair<std::string, std::string>{R"("decoder_sparse_step": 2)", "decoder_sparse_step"},
                              {R"("mlp_only_layers": [0])", "mlp_only_layers"},
                              {R"("attention_bias": true)", "attention_bias"}}) {
    std::string error;
    CHECK_FALSE(parseModelConfig("{" + base + ", " + extra + "}", "q.json", error));
    CHECK(error.find("'" + field + "'") != std::string::npos);
  }
  std::string error;
  CHECK(parseModelConfig("{" + base + R"(, "mlp_only_layers": [], "decoder_sparse_step": 1})", "q.json", error));
}

TEST_CASE("DeepSeek-V3: 671B main model, MTP apart, 37B active", "[plan]") {
  std::string error;
  std::optional<ModelConfig> config = readModelConfig(input("deepseek-v3.json"), error);
  REQUIRE(config);
  CHECK(config->usesLatentAttention());
  ModelLayers v3 = buildLayers(*config);
  CHECK(billions(v3.totalParams) == Approx(671).margin(0.5));
  CHECK(billions(v3.totalWithMtpParams) == Approx(685).margin(0.6));
  CHECK(billions(v3.mtpParams) == Approx(14).margin(0.6)); // "14B of the MTP module" (the model card)
  // DeepSeek counts active parameters without the embedding lookup.
  CHECK(billions(v3.activeNonEmbeddingParams) == Approx(37).margin(0.5));
  // Embedding, 3 dense layers, 58 MoE layers, head: the MTP layer is not one of them.
  REQUIRE(v3.layers.size() == 63);
  CHECK(v3.layers[0].kind == LayerKind::Embedding);
  CHECK(v3.layers[3].kind == LayerKind::Dense);
  CHECK(v3.layers[4].kind == LayerKind::Moe);
  CHECK(v3.layers[62].kind == LayerKind::Head);
  // Trained with its MTP module (as DeepSeek-V3 was): its MoE layer and a
  // pass through the shared head come before the head, on the last stage.
  // The stage stores what the checkpoint's module has but the output head,
  // which it shares: 14B less the head's 0.9B. The main model's totals stay.
  ModelLayers trained = buildLayers(*config, trainedMtpModules(Training{}, config->nextnPredictLayers));
  REQUIRE(trained.layers.size() == 65);
  CHECK(trained.mtpModules == 1);
  CHECK(trained.transformerLayers() == 61);
  CHECK(trained.layers[62].kind == LayerKind::Moe);
  CHECK(trained.layers[63].kind == LayerKind::Head);
  CHECK(trained.layers[64].kind == LayerKind::Head);
  CHECK(trained.totalParams == v3.totalParams);
  CHECK(trained.activeNonEmbeddingParams == v3.activeNonEmbeddingParams);
  double head = double(config->vocabSize) * double(config->hiddenSize);
  CHECK(trained.layers[62].storedParams + trained.layers[63].storedParams == Approx(v3.mtpParams - head));
  // Its logits cost what the main head's do.
  CHECK(trained.layers[63].mlpFlopsPerToken == trained.layers[64].mlpFlopsPerToken);
  // What the module costs agrees with NVIDIA's own model-FLOP count: the
  // NeMo 25.11 table's DeepSeek-V3 rows give model TFLOP/s over tokens/s of
  // 557e12 / 2,139 = 260.4 GFLOP a token "w/ MTP" (B200) and 1,003e12 / 4,018
  // = 249.6 "w/o MTP" (GB200), at sequence 4,096: 10.8 GFLOP more, forward
  // and backward. (The totals differ from the model's by how attention is
  // counted; the module's share does not depend on it.)
  auto perToken = [](const ModelLayers &layers) {
    return 3 * layers.forwardFlops(0, layers.layers.size(), 1, 4096) / 4096;
  };
  CHECK((perToken(trained) - perToken(v3)) / 1e9 == Approx(260.4 - 249.6).epsilon(0.03));
  // mtp_layers 0 trains none.
  Training none;
  none.mtpLayers = 0;
  CHECK(buildLayers(*config, trainedMtpModules(none, config->nextnPredictLayers)).layers.size() == 63);
}

TEST_CASE("DeepSeek-V2-Lite: no q latent, 15.7B total, 2.4B active", "[plan]") {
  ModelLayers lite = layersOf("deepseek-v2-lite.json");
  CHECK(billions(lite.totalParams) == Approx(15.7).margin(0.05));
  CHECK(billions(lite.activeNonEmbeddingParams) == Approx(2.4).margin(0.06)); // 2.45, published as 2.4
}

TEST_CASE("A tied head counts once in the model but is stored by its stage", "[plan]") {
  std::string error;
  std::string tied = std::string(kLlama).insert(1, R"("tie_word_embeddings": true, )");
  std::optional<ModelConfig> a = parseModelConfig(kLlama, "a.json", error);
  std::optional<ModelConfig> b = parseModelConfig(tied, "b.json", error);
  REQUIRE(a);
  REQUIRE(b);
  ModelLayers untiedLayers = buildLayers(*a), tiedLayers = buildLayers(*b);
  CHECK(untiedLayers.totalParams - tiedLayers.totalParams == 100 * 64);
  CHECK(tiedLayers.layers.back().params == 64); // the final norm only
  CHECK(tiedLayers.layers.back().storedParams == 64 + 100 * 64);
  CHECK(tiedLayers.layers.back().mlpFlopsPerToken == 2 * 100 * 64);
}

TEST_CASE("Per-layer FLOPs: 2 x weights per token plus the attention score term", "[plan]") {
  std::string error;
  std::optional<ModelConfig> config = parseModelConfig(kLlama, "c.json", error);
  REQUIRE(config);
  ModelLayers model = buildLayers(*config);
  REQUIRE(model.layers.size() == 4);
  const LayerSpec &layer = model.layers[1];
  // q, o: 64x64; k, v: 64x32 (2 of 4 heads); gated MLP 3 x 64 x 128.
  CHECK(layer.attentionFlopsPerToken == 2 * (2 * 64 * 64 + 2 * 64 * 32));
  CHECK(layer.mlpFlopsPerToken == 2 * 3 * 64 * 128);
  CHECK(layer.attentionScoreFlopsPerTokenPerPosition == 4 * 64); // 4 a d = 4 h
  double b = 2, s = 8;
  double perLayer = b * s * (layer.attentionFlopsPerToken + layer.mlpFlopsPerToken) + 4 * b * s * s * 64;
  CHECK(model.forwardFlops(1, 2, 2, 8) == Approx(perLayer));
  CHECK(model.forwardFlops(0, 1, 2, 8) == 0); // the embedding is a lookup
  CHECK(model.forwardFlops(3, 4, 2, 8) == b * s * 2 * 100 * 64);
}

TEST_CASE("Model config errors name the file and the field", "[plan]") {
  CHECK(errorOf(R"({"model_type": "bert"})").find("config.json: field 'model_type' is 'bert'") == 0);
  CHECK(errorOf(R"({"hidden_size": 1})") == "config.json: field 'model_type' is missing");
  CHECK(errorOf(R"({"model_type": "llama", "hidden_size": 64})") ==
        "config.json: field 'intermediate_size' is missing");
  std::string bad = kLlama;
  bad.replace(bad.find("\"hidden_size\": 64"), 17, "\"hidden_size\": \"64\"");
  CHECK(errorOf(bad) == "config.json: field 'hidden_size' must be an integer");
  bad = kLlama;
  bad.replace(bad.find("\"hidden_size\": 64"), 17, "\"hidden_size\": 64.5");
  CHECK(errorOf(bad).find("field 'hidden_size' must be an integer") != std::string::npos);
  bad = kLlama;
  bad.replace(bad.find("\"hidden_size\": 64"), 17, "\"hidden_size\": 1e400");
  CHECK(errorOf(bad) == "config.json: field 'hidden_size' is not a finite number");
  bad = kLlama;
  bad.replace(bad.find("\"num_hidden_layers\": 2"), 22, "\"num_hidden_layers\": 1000000000");
  CHECK(errorOf(bad) == "config.json: field 'num_hidden_layers' is 1000000000, expected 1 to 100000");
  bad = kLlama;
  bad.replace(bad.find("\"num_hidden_layers\": 2"), 22, "\"num_hidden_layers\": -2");
  CHECK(errorOf(bad).find("field 'num_hidden_layers' is -2") != std::string::npos);
  bad = kLlama;
  bad.replace(bad.find("\"num_key_value_heads\": 2"), 24, "\"num_key_value_heads\": 3");
  CHECK(errorOf(bad).find("field 'num_key_value_heads' is 3, which does not divide") != std::string::npos);
  bad = kLlama;
  bad.replace(bad.find("\"num_attention_heads\": 4"), 24, "\"num_attention_heads\": 5");
  CHECK(errorOf(bad).find("field 'num_attention_heads' is 5, which does not divide") != std::string::npos);
  CHECK(errorOf(R"({"model_type": "mixtral", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100, "num_local_experts": 2,
    "num_experts_per_tok": 3})") == "config.json: field 'num_experts_per_tok' is 3, expected 1 to 2");
  CHECK(errorOf(R"({"model_type": 7})") == "config.json: field 'model_type' must be a string");
}

TEST_CASE("Malformed JSON is an error, never a crash", "[plan]") {
  CHECK(errorOf("").find("config.json: not valid JSON") == 0);
  CHECK(errorOf("[1, 2]") == "config.json: expected one JSON object");
  CHECK(errorOf("{\"model_type\": \"llama\"") .find("not valid JSON") != std::string::npos);
  CHECK(errorOf(std::string(100000, '[') + std::string(100000, ']')).find("nested deeper") !=
        std::string::npos);
  CHECK(errorOf("\xff\xfe").find("not valid JSON") != std::string::npos);
  std::string error;
  CHECK_FALSE(readModelConfig(input("no-such-config.json"), error));
  CHECK(error.find("cannot read '") == 0);
}

TEST_CASE("Any change to a real config is read or refused with a message, never a crash", "[plan]") {
  // Every field of every shipped config, replaced in turn by values of the
  // wrong type, sign or size, or removed: each result either parses to a
  // model with finite, positive counts or is an error naming a field.
  const char *files[] = {"gpt2.json", "llama-3-8b.json", "qwen2-7b.json", "mixtral-8x7b.json",
                         "deepseek-v3.json", "deepseek-v2-lite.json"};
  const llvm::json::Value replacements[] = {
      nullptr, "x", -1, 0, 1, 3, 1e300, 0.5, int64_t(1) << 40, llvm::json::Array{1},
      llvm::json::Object{}, true};
  int read = 0, refused = 0;
  for (const char *file : files) {
    std::string error;
    auto buffer = llvm::MemoryBuffer::getFile(input(file));
    REQUIRE(buffer);
    auto json = llvm::json::parse((*buffer)->getBuffer());
    bool parsed = bool(json);
    REQUIRE(parsed);
    const llvm::json::Object &original = *json->getAsObject();
    for (const auto &field : original) {
      for (int variant = -1; variant < int(std::size(replacements)); ++variant) {
        llvm::json::Object changed = original;
        if (variant < 0)
          changed.erase(field.first);
        else
          changed[field.first] = replacements[variant];
        std::string text;
        llvm::raw_string_ostream(text) << llvm::json::Value(std::move(changed));
        std::optional<ModelConfig> config = parseModelConfig(text, file, error);
        if (!config) {
          ++refused;
          CHECK(error.find(std::string(file) + ": field '") == 0);
          continue;
        }
        ++read;
        ModelLayers layers = buildLayers(*config);
        CHECK(std::isfinite(layers.totalParams));
        CHECK(layers.totalParams > 0);
        CHECK(layers.activeParams <= layers.totalParams + 1);
      }
    }
  }
  CHECK(read > 0);
  CHECK(refused > 0);
}
