// The planner's per-operation time model and its parts: GEMM shape losses
// (tile and wave quantization, NVIDIA's "Matrix Multiplication Background"
// guide), FlashAttention's FLOPs, FP8, tensor- and context-parallel
// communication of a layer, 6N against the model's FLOPs, and uneven
// pipeline stages (first/last stage counts, Megatron-style layout strings).
#include "plan/LayerTimes.h"
#include "plan/OpTimeModel.h"
#include "plan/StageCosts.h"
#include "plan/StageLayout.h"

#include "TestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <map>

using namespace pipec;
using namespace pipec::plan;

namespace {

ModelConfig parse(const std::string &json) { return test::parseModelText(json); }

Cluster a100() { return *clusterPreset("a100"); }

Training train(int64_t t = 1, int64_t cp = 1) {
  Training tr;
  tr.globalBatch = 8;
  tr.sequenceLength = 4096;
  tr.microBatch = 1;
  tr.tensorParallel = t;
  tr.contextParallel = cp;
  return tr;
}

} // namespace

TEST_CASE("GEMM shapes lose to tile and wave quantization as NVIDIA's guide describes", "[plan]") {
  Cluster c = a100(); // 108 SMs
  // 9 x 12 tiles of 256 x 128: one full wave of 108.
  CHECK(gemmShapeEfficiency(c, 9 * 256, 12 * 128) == 1);
  // One more row of tiles: 120 tiles, two waves of 108, the second nearly empty.
  CHECK(gemmShapeEfficiency(c, 10 * 256, 12 * 128) == Approx(120.0 / 216));
  // Half a tile more in m: the partial tiles cost whole ones as well.
  CHECK(gemmShapeEfficiency(c, 9 * 256 + 128, 12 * 128) < 1);
  // Without an SM count there are no shape losses.
  Cluster flat = c;
  flat.smCount = 0;
  CHECK(gemmShapeEfficiency(flat, 1, 1) == 1);
  // A full-wave GEMM runs at peak x matmul efficiency.
  double m = 9 * 256, n = 12 * 128, k = 8192;
  CHECK(gemmSeconds(c, m, n, k, false) == Approx(2 * m * n * k / (312e12 * c.matmulEfficiency)));
  // An outer product (k = 1) is limited by memory: its bytes over the
  // attainable bandwidth (mostly the m x n output).
  CHECK(gemmSeconds(c, 8192, 8192, 1, false) ==
        Approx((2 * (8192 + 8192.0) + 2 * 8192.0 * 8192) / (2039e9 * c.memoryEfficiency)));
  // A skinny GEMM (few rows) runs smaller tiles and fewer of them: slower per FLOP.
  CHECK(gemmSeconds(c, 64, 8192, 8192, false) / 64 > gemmSeconds(c, 2304, 8192, 8192, false) / 2304);
}

TEST_CASE("FlashAttention: causal halves the scores, the backward does 2.5x the FLOPs", "[plan]") {
  Cluster c = a100();
  double full = flashForwardSeconds(c, 32, 4096, 4096, 128, 128, false);
  CHECK(full == Approx(2 * 32 * 4096.0 * 4096 * 256 / (312e12 * c.attentionForwardEfficiency)));
  CHECK(flashForwardSeconds(c, 32, 4096, 4096, 128, 128, true) == Approx(full / 2));
  CHECK(flashBackwardSeconds(c, 32, 4096, 4096, 128, 128, true) ==
        Approx(2.5 * full / 2 * c.attentionForwardEfficiency / c.attentionBackwardEfficiency));
}

TEST_CASE("FP8 doubles the matmul peak but adds casts; an FP8 plan needs FP8 tensor cores", "[plan]") {
  Cluster h100 = *clusterPreset("h100");
  double m = 8192, n = 8192, k = 8192;
  double bf16 = gemmSeconds(h100, m, n, k, false), fp8 = gemmSeconds(h100, m, n, k, true);
  // FP8's efficiency falls with a short k: k / (k + 797) of 0.742 (DeepGEMM's
  // table, GpuPresets.cpp).
  CHECK(fp8 == Approx(bf16 * (989e12 * 0.80) / (1979e12 * 0.742 * k / (k + 797))));
  CHECK(fp8CastSeconds(h100, 100) == Approx(600 / (3.35e12 * 0.8)));
  ModelConfig llama = parse(R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256})");
  Training tr = train();
  LayerTime b = layerTime(llama, LayerKind::Dense, h100, tr, 1);
  tr.precision = Precision::FP8;
  LayerTime f = layerTime(llama, LayerKind::Dense, h100, tr, 1);
  CHECK(f.mlpForward < b.mlpForward);
  CHECK(f.mlpForward > b.mlpForward / 2); // casts and the lower FP8 efficiency
  // The A100 has no FP8: the layout is refused, naming the field.
  ModelLayers model = buildLayers(llama);
  ParallelLayout l;
  l.stageLayers = {{0, 4}};
  l.stageRank = {0};
  std::string error;
  CHECK_FALSE(computeCosts(llama, model, a100(), tr, l, error));
  CHECK(error.find("peak_flops_fp8") != std::string::npos);
}

TEST_CASE("FP8 GEMMs reproduce DeepGEMM's measured H800 table, k effect included", "[plan]") {
  // deepseek-ai/DeepGEMM README, "Normal GEMMs for dense models" (commit
  // a6d97a1, the first published table; H800, FP8 with fine-grained
  // scaling): the M = 4096 rows, TFLOP/s.
  // Two of them (N 7168, K 16384 and 2048) set E and k0 in GpuPresets.cpp; the
  // other four are independent of the model's constants and checked here.
  Cluster h800 = *clusterPreset("h800");
  struct Row {
    double m, n, k, tflops, tolerance;
  };
  const Row rows[] = {
      {4096, 7168, 16384, 1358, 0.01}, // used for the constants: exact
      {4096, 7168, 2048, 1025, 0.01},  // used for the constants: exact
      {4096, 4096, 7168, 1304, 0.05},
      {4096, 24576, 1536, 990, 0.10},
      {4096, 32768, 512, 590, 0.10},
      // 2112 columns: the shape model's tiles, not k, leave it 17% low.
      {4096, 2112, 7168, 1058, 0.20},
  };
  for (const Row &r : rows) {
    double modelled = 2 * r.m * r.n * r.k / gemmSeconds(h800, r.m, r.n, r.k, true) / 1e12;
    INFO("N " << r.n << " K " << r.k << ": modelled " << modelled << " TFLOP/s, measured " << r.tflops);
    CHECK(std::abs(modelled / r.tflops - 1) <= r.tolerance);
  }
  // Without the k term (the previous model, 0.70 whatever k) the short-k rows
  // are 31-128% fast: the term is what makes them fit.
  Cluster flat = h800;
  flat.fp8GemmKOverhead = 0;
  flat.matmulEfficiencyFp8 = 0.70;
  double flat512 = 2 * 4096.0 * 32768 * 512 / gemmSeconds(flat, 4096, 32768, 512, true) / 1e12;
  CHECK(flat512 / 590 > 2);
  // BF16 GEMMs have no k term (no per-shape table was found for them).
  CHECK(gemmSeconds(h800, 4096, 7168, 512, false) * 4 == Approx(gemmSeconds(h800, 4096, 7168, 2048, false)));
}

TEST_CASE("GEMM levels reproduce the Maximum Achievable Matmul FLOPS table", "[plan]") {
  // stas00/ml-engineering, compute/accelerator/README.md (744d01e): the best
  // shape of a search and its TFLOP/s, per GPU and precision. The A100 and
  // Hopper levels come from other sources (GpuPresets.cpp) and are checked
  // against these independent measurements; the B200's levels are taken from
  // its two rows (exact up to the shape's wave losses).
  struct Row {
    const char *gpu;
    double m, n, k, tflops, tolerance;
    bool fp8;
  };
  const Row rows[] = {
      {"a100", 1024, 10240, 5120, 271.2, 0.05, false},
      {"h100", 2048, 2048, 13312, 794.5, 0.05, false},
      {"b200", 1792, 16128, 3072, 1745.0, 0.02, false},
      {"b200", 15360, 4096, 3072, 3432.5, 0.02, true},
  };
  for (const Row &r : rows) {
    Cluster c = *clusterPreset(r.gpu);
    double modelled = 2 * r.m * r.n * r.k / gemmSeconds(c, r.m, r.n, r.k, r.fp8) / 1e12;
    INFO(r.gpu << (r.fp8 ? " FP8 " : " BF16 ") << r.m << "x" << r.n << "x" << r.k << ": modelled "
               << modelled << " TFLOP/s, measured " << r.tflops);
    CHECK(std::abs(modelled / r.tflops - 1) <= r.tolerance);
  }
  // H100 FP8, 1024 x 9216 x 14336 at 1,402.6 (70.9%): the k term gives the
  // level (0.742 x 14336 / 15133 = 0.703) but the shape model loses a quarter
  // to waves (288 tiles of 128 x 256 over 132 SMs: 3 waves, 0.73 full) that
  // the library avoids with tiles the model does not list. A known
  // pessimism of the shape model at m = 1024, pinned here so a change shows.
  {
    Cluster h100 = *clusterPreset("h100");
    double modelled = 2 * 1024.0 * 9216 * 14336 / gemmSeconds(h100, 1024, 9216, 14336, true) / 1e12;
    CHECK(modelled / 1402.6 == Approx(0.72).margin(0.02));
    CHECK(gemmShapeEfficiency(h100, 1024, 9216) == Approx(288.0 / 396));
  }
  // With Hopper's k term (what the B200 took before) its best FP8 shape comes
  // out a quarter slow: the term does not carry over to Blackwell.
  Cluster hopperLike = *clusterPreset("b200");
  hopperLike.matmulEfficiencyFp8 = 0.742;
  hopperLike.fp8GemmKOverhead = 797;
  double old = 2 * 15360.0 * 4096 * 3072 / gemmSeconds(hopperLike, 15360, 4096, 3072, true) / 1e12;
  CHECK(old / 3432.5 < 0.8);
}

TEST_CASE("The head's cross-entropy moves the bytes of Megatron-Core's passes over the logits", "[plan]") {
  // Megatron-Core's vocabulary-parallel cross-entropy (tensor_parallel/
  // cross_entropy.py), counted pass by pass over the T x V/t logits of this
  // GPU: forward cast to fp32 (read 2, write 4), subtract-and-exp in place
  // (4, 4), normalize into the kept softmax (4, 4): 22 bytes a logit;
  // backward scale in place (4, 4) and cast back to BF16 (4, 2): 14. The
  // final norm moves 4 T h BF16 bytes (twice that in the backward), as before.
  Cluster h100 = *clusterPreset("h100");
  ModelConfig llama = parse(R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256})");
  double T = 4096, h = 4096, V = 128256, bandwidth = 3.35e12 * h100.memoryEfficiency;
  for (int64_t t : {1, 2}) {
    Training tr = train(t);
    tr.sequenceParallel = false;
    LayerTime head = layerTime(llama, LayerKind::Head, h100, tr, 1);
    double logits = T * V / double(t), norm = 4 * T * h * 2;
    CHECK(head.mlpForward - gemmSeconds(h100, T, V / double(t), h, false) ==
          Approx((norm + 22 * logits) / bandwidth));
    CHECK(head.mlpInputGrad - gemmSeconds(h100, T, h, V / double(t), false) ==
          Approx((2 * norm + 14 * logits) / bandwidth));
  }
}

TEST_CASE("A layer's matmul FLOPs are 6N per token over forward and backward", "[plan]") {
  // With shape losses off and memory never the limit, the matmul time of one
  // layer's forward + input gradient + weight gradient is 6 x weights x tokens
  // / attainable FLOP/s: the 6N rule (Kaplan et al. 2020) per layer.
  Cluster c = a100();
  c.smCount = 0;
  ModelConfig llama = parse(R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256})");
  ModelLayers model = buildLayers(llama);
  Training tr = train();
  LayerTime x = layerTime(llama, LayerKind::Dense, c, tr, 1);
  double weights = (model.layers[1].attentionFlopsPerToken + model.layers[1].mlpFlopsPerToken) / 2;
  double gemm = 6 * weights * 4096 / (312e12 * c.matmulEfficiency);
  // The weight gradients are exactly the third that has no elementwise part.
  CHECK(x.attentionWeightGrad + x.mlpWeightGrad == Approx(gemm / 3));
  // The rest (attention, norms, activations) comes on top.
  double total = x.attentionForward + x.mlpForward + x.attentionInputGrad + x.mlpInputGrad +
                 x.attentionWeightGrad + x.mlpWeightGrad;
  CHECK(total > gemm);
}

TEST_CASE("Tensor and context parallelism: collectives a layer does, and what overlap hides", "[plan]") {
  Cluster c = *clusterPreset("h100");
  ModelConfig llama = parse(R"({"model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672,
    "num_hidden_layers": 2, "num_attention_heads": 64, "num_key_value_heads": 8, "vocab_size": 128256})");
  Training tr = train(8);
  LayerTime x = layerTime(llama, LayerKind::Dense, c, tr, 1);
  // Sequence parallelism: an all-gather and a reduce-scatter per half each way,
  // (t-1)/t of s b h bf16 bytes at the achieved bus bandwidth (the issue's
  // estimate: about 0.5 ms a layer forward at h 8192, s 4096, t 8).
  double half = reduceScatterSeconds(4096.0 * 8192 * 2, 8, c.busBandwidth(true), c.intraNodeLatency);
  CHECK(x.tpAttentionForward == Approx(2 * half));
  CHECK(x.tpAttentionForward + x.tpMlpForward == Approx(4 * half));
  // Unhidden, that is a large share of the layer's forward matmuls at t = 8:
  // the issue's estimate is 0.5 ms against 1.7 ms at the full link rate; at
  // the achieved 80% and with ring latencies it is more.
  double matmuls = x.attentionWeightGrad + x.mlpWeightGrad; // = the forward's matmul time
  CHECK(4 * half / matmuls > 0.25);
  CHECK(4 * half / matmuls < 0.8);
  // The backward re-gathers the input for the weight gradient, partly hidden.
  CHECK(x.tpAttentionBackward >= 2 * half);
  tr.tpCommOverlap = true;
  LayerTime hidden = layerTime(llama, LayerKind::Dense, c, tr, 1);
  CHECK(hidden.tpMlpForward < x.tpMlpForward);
  // Context parallelism: cp - 1 ring steps of K and V, hidden behind the
  // attention of each chunk when the link keeps up; a GPU's matmuls see s / cp tokens.
  Training ring = train(1, 4);
  LayerTime r = layerTime(llama, LayerKind::Dense, c, ring, 1);
  LayerTime one = layerTime(llama, LayerKind::Dense, c, train(), 1);
  CHECK(r.cpForward >= 0);
  CHECK(r.mlpWeightGrad == Approx(one.mlpWeightGrad / 4).epsilon(0.05));
  Cluster slow = c;
  slow.intraNodeBandwidth = 1e9; // a link far slower than the attention: the exchange shows
  CHECK(layerTime(llama, LayerKind::Dense, slow, ring, 1).cpForward > 0);
}

TEST_CASE("TP overlap runs Transformer Engine's userbuffers methods, which cost the matmuls time", "[plan]") {
  ModelConfig llama = parse(R"({"model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672,
    "num_hidden_layers": 2, "num_attention_heads": 64, "num_key_value_heads": 8, "vocab_size": 128256})");
  Training tr = train(8);
  tr.tpCommOverlap = true;
  // Without SMs (no shape losses, nothing to take) splitting a matmul costs
  // nothing, and where the matmuls are far longer than the exchanges (the
  // MLP) only the pipeline's last chunk is exposed forward: a quarter of the
  // tensor reduce-scattered after fc2. The attention's matmuls are small
  // beside its exchanges (8 KV heads): more shows, never more than unhidden.
  Cluster ideal = *clusterPreset("h100");
  ideal.smCount = 0;
  double quarter =
      reduceScatterSeconds(4096.0 * 8192 * 2 / 4, 8, ideal.busBandwidth(true), ideal.intraNodeLatency);
  Training plain = tr;
  plain.tpCommOverlap = false;
  LayerTime x = layerTime(llama, LayerKind::Dense, ideal, tr, 1);
  LayerTime unsplit = layerTime(llama, LayerKind::Dense, ideal, plain, 1);
  CHECK(x.tpMlpForward == Approx(quarter));
  CHECK(x.tpAttentionForward > quarter);
  CHECK(x.tpAttentionForward < unsplit.tpAttentionForward);
  CHECK(x.attentionForward == Approx(unsplit.attentionForward));
  CHECK(x.mlpWeightGrad == Approx(unsplit.mlpWeightGrad));
  // The MLP's backward exchanges all hide: the ring behind fc2's dgrad
  // chunks, the bulk collectives behind fc1's dgrad and wgrad.
  CHECK(x.tpMlpBackward == 0);
  CHECK(x.tpAttentionBackward < unsplit.tpAttentionBackward);
  // On an H100 with TE's defaults the pipeline and bulk matmuls lose the 16
  // SMs the collective holds (fc2 forward, fc1's dgrad and wgrad; the
  // projections likewise), and
  // ring exchange runs t chunks of s / t rows, which fill the GPU less.
  Cluster h100 = *clusterPreset("h100");
  LayerTime real = layerTime(llama, LayerKind::Dense, h100, tr, 1);
  LayerTime free = layerTime(llama, LayerKind::Dense, h100, plain, 1);
  CHECK(real.mlpForward > free.mlpForward);
  CHECK(real.mlpInputGrad > free.mlpInputGrad);
  CHECK(real.mlpWeightGrad > free.mlpWeightGrad);
  double fc1 = gemmSeconds(h100, 4096, 2 * 28672 / 8, 8192, false);
  double fc1Wgrad = gemmSeconds(h100, 8192, 2 * 28672 / 8, 4096, false);
  CHECK(real.mlpWeightGrad - free.mlpWeightGrad ==
        Approx(gemmSecondsOnSms(h100, 8192, 2 * 28672 / 8, 4096, false, 132 - 16) - fc1Wgrad));
  CHECK(gemmSecondsOnSms(h100, 4096, 2 * 28672 / 8, 8192, false, 116) > fc1 * 132 / 116 * 0.95);
  // Fewer SMs held, less lost; still more exposed than nothing.
  Training light = tr;
  light.tpOverlapConfig.fc1Wgrad.numSm = 2;
  CHECK(layerTime(llama, LayerKind::Dense, h100, light, 1).mlpWeightGrad < real.mlpWeightGrad);
  CHECK(real.tpMlpForward > 0);
  CHECK(real.tpMlpForward < free.tpMlpForward);
  // Without the margin (as NeMo's recipes run bulk) the wgrad keeps every SM
  // and loses the collective's 4 of 132 only while the reduce-scatter runs:
  // time = wgrad + the collective's time x 4 / 132.
  Training shared = tr;
  shared.tpOverlapConfig.fc1Wgrad = {TpOverlapMethod::Bulk, 4, false, 4, false};
  double scatter = reduceScatterSeconds(4096.0 * 8192 * 2, 8, h100.busBandwidth(true), h100.intraNodeLatency);
  CHECK(layerTime(llama, LayerKind::Dense, h100, shared, 1).mlpWeightGrad - free.mlpWeightGrad ==
        Approx(scatter * 4 / 132));
  // fc2's reduce-scatter by ring exchange (the FP8 recipes): t chunk matmuls,
  // each partial output sent on; the last transfer, an eighth, is exposed.
  Training ringed = tr;
  ringed.tpOverlapConfig.fc2Fprop = {TpOverlapMethod::RingExchange, 1, false, 4, false};
  double eighth = messageSeconds(4096.0 * 8192 * 2 / 8, ideal.busBandwidth(true), ideal.intraNodeLatency);
  CHECK(layerTime(llama, LayerKind::Dense, ideal, ringed, 1).tpMlpForward == Approx(eighth));
  // ... and then one kernel sums the 8 partials received (reads them all,
  // writes this rank's): the only computation the ring adds without shape losses.
  CHECK(layerTime(llama, LayerKind::Dense, ideal, ringed, 1).mlpForward - unsplit.mlpForward ==
        Approx(memoryBoundSeconds(ideal, 4096.0 * 8192 * 2 * (1 + 1.0 / 8))));
  // Not overlapped at a point (null in the configuration): that collective
  // shows whole, as without overlap.
  Training off = tr;
  off.tpOverlapConfig.fc2Fprop.method = TpOverlapMethod::None;
  CHECK(layerTime(llama, LayerKind::Dense, ideal, off, 1).tpMlpForward == Approx(scatter));
  // Nothing overlapped anywhere costs exactly what no overlap costs.
  Training none = tr;
  for (TpOverlapPoint *p : {&none.tpOverlapConfig.qkvFprop, &none.tpOverlapConfig.fc1Fprop,
                            &none.tpOverlapConfig.projDgrad, &none.tpOverlapConfig.fc2Dgrad,
                            &none.tpOverlapConfig.projFprop, &none.tpOverlapConfig.fc2Fprop,
                            &none.tpOverlapConfig.qkvDgrad, &none.tpOverlapConfig.fc1Dgrad,
                            &none.tpOverlapConfig.qkvWgrad, &none.tpOverlapConfig.fc1Wgrad})
    p->method = TpOverlapMethod::None;
  LayerTime nothing = layerTime(llama, LayerKind::Dense, h100, none, 1);
  CHECK(nothing.tpMlpBackward == free.tpMlpBackward);
  CHECK(nothing.tpAttentionForward == free.tpAttentionForward);
  CHECK(nothing.mlpForward == free.mlpForward);
  // More chunks than rows: a chunk is never less than one row (a recipe's
  // num_splits on a short sequence).
  Training tiny = tr;
  tiny.sequenceLength = 8;
  tiny.tpOverlapConfig.fc2Fprop.numSplits = 1024;
  LayerTime few = layerTime(llama, LayerKind::Dense, h100, tiny, 1);
  tiny.tpOverlapConfig.fc2Fprop.numSplits = 8;
  CHECK(few.mlpForward == Approx(layerTime(llama, LayerKind::Dense, h100, tiny, 1).mlpForward));
}

TEST_CASE("Uneven stages: first and last stage counts, and Megatron layout strings", "[plan]") {
  ModelConfig llama = parse(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 10, "num_attention_heads": 4, "vocab_size": 100})");
  ModelLayers model = buildLayers(llama); // 12 layers: embedding, 10, head
  Training tr = train();
  std::string error;
  using Ranges = std::vector<std::pair<size_t, size_t>>;
  // Even: 10 layers over 4 stages, the spare ones after the first stage.
  CHECK(*stageLayerRanges(model, 4, tr, error) == Ranges{{0, 3}, {3, 6}, {6, 9}, {9, 12}});
  // One layer on the first and the last stage (they hold the embedding, the head).
  tr.firstStageLayers = 1;
  tr.lastStageLayers = 1;
  CHECK(*stageLayerRanges(model, 4, tr, error) == Ranges{{0, 2}, {2, 6}, {6, 10}, {10, 12}});
  // None: the embedding and the head alone (Llama 3's 126 layers on 128 stages).
  tr.firstStageLayers = tr.lastStageLayers = 0;
  auto bare = stageLayerRanges(model, 12, tr, error);
  REQUIRE(bare);
  CHECK(bare->front() == std::pair<size_t, size_t>{0, 1});
  CHECK(bare->back() == std::pair<size_t, size_t>{11, 12});
  // Too many for the rest.
  tr.firstStageLayers = 9;
  CHECK_FALSE(stageLayerRanges(model, 4, tr, error));
  CHECK(error.find("cannot give 9 to the first stage") != std::string::npos);
  // A layout string names every stage and wins over the counts.
  tr.pipelineLayout = "Et*2|t*3|t*4|tL";
  CHECK(*stageLayerRanges(model, 4, tr, error) == Ranges{{0, 3}, {3, 6}, {6, 10}, {10, 12}});
  CHECK_FALSE(stageLayerRanges(model, 3, tr, error));
  CHECK(error == "pipeline layout 'Et*2|t*3|t*4|tL' names 4 stages; the schedule has 3");
  tr.pipelineLayout = "Et*2|t*3|t*4|t";
  CHECK_FALSE(stageLayerRanges(model, 4, tr, error));
  CHECK(error == "pipeline layout 'Et*2|t*3|t*4|t', stage 3: the last stage must hold the head 'L'");
  CHECK_FALSE(parsePipelineLayout("Et|x|tL", error));
  CHECK(error == "pipeline layout 'Et|x|tL', stage 1: 'x' is not E, t, m, L, '*' or '|'");
  CHECK_FALSE(parsePipelineLayout("Et*|tL", error));
  CHECK(error == "pipeline layout 'Et*|tL', stage 0: '*' needs a count after it");
  CHECK_FALSE(parsePipelineLayout("t|EtL", error));
  CHECK(error == "pipeline layout 't|EtL', stage 1: 'E' (the embedding) belongs once on the first stage");
  tr.pipelineLayout = "Et*2|t*3|t*3|tL";
  CHECK_FALSE(stageLayerRanges(model, 4, tr, error));
  CHECK(error == "stage split: the stages hold 9 transformer layers; the model has 10");
}

TEST_CASE("MTP modules sit on the last stage; a layout names them with m", "[plan]") {
  ModelConfig llama = parse(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 10, "num_attention_heads": 4, "vocab_size": 100})");
  // One module: embedding, 10 layers, the module's layer and head pass, the head.
  ModelLayers model = buildLayers(llama, 1);
  REQUIRE(model.layers.size() == 14);
  CHECK(model.transformerLayers() == 10);
  CHECK(model.mtpEntries() == 2);
  Training tr = train();
  std::string error;
  using Ranges = std::vector<std::pair<size_t, size_t>>;
  // The even split is the main model's; the module goes with the head.
  CHECK(*stageLayerRanges(model, 4, tr, error) == Ranges{{0, 3}, {3, 6}, {6, 9}, {9, 14}});
  tr.firstStageLayers = 1;
  tr.lastStageLayers = 1;
  CHECK(*stageLayerRanges(model, 4, tr, error) == Ranges{{0, 2}, {2, 6}, {6, 10}, {10, 14}});
  tr.firstStageLayers = tr.lastStageLayers = -1;
  // Megatron's layout names the module: "m" before the loss.
  tr.pipelineLayout = "Et*2|t*3|t*4|tmL";
  CHECK(*stageLayerRanges(model, 4, tr, error) == Ranges{{0, 3}, {3, 6}, {6, 10}, {10, 14}});
  tr.pipelineLayout = "Et*2|t*3|t*4|tL";
  CHECK_FALSE(stageLayerRanges(model, 4, tr, error));
  CHECK(error == "pipeline layout 'Et*2|t*3|t*4|tL' places 0 MTP modules ('m'); training runs 1 (mtp_layers)");
  CHECK_FALSE(parsePipelineLayout("Et*2|mt*3|t*4|tL", error));
  CHECK(error == "pipeline layout 'Et*2|mt*3|t*4|tL', stage 1: 'm' (an MTP module) belongs on the last stage, with the loss");
  int64_t modules = 0;
  CHECK(parsePipelineLayout("Et*2|t*3|t*4|tm*2L", error, &modules));
  CHECK(modules == 2);
  // Without modules, an "m" in the layout is refused by the count.
  tr.pipelineLayout = "Et*2|t*3|t*4|tmL";
  CHECK_FALSE(stageLayerRanges(buildLayers(llama), 4, tr, error));
  CHECK(error == "pipeline layout 'Et*2|t*3|t*4|tmL' places 1 MTP module ('m'); training runs 0 (mtp_layers)");
}

TEST_CASE("plan sizes the end stages to balance the ranks' work", "[plan]") {
  // A large vocabulary: the head is worth several layers.
  ModelConfig heavyHead = parse(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 12, "num_attention_heads": 4, "vocab_size": 4000})");
  ModelLayers model = buildLayers(heavyHead);
  const int64_t seq = 256;
  // Work as forward FLOPs a sequence here (plan weighs each kind's seconds).
  auto flopsOf = [&](const ModelLayers &layers) {
    std::vector<double> work;
    for (size_t i = 0; i < layers.layers.size(); ++i)
      work.push_back(layers.forwardFlops(i, i + 1, 1, seq));
    return work;
  };
  using Ranks = std::vector<std::vector<int64_t>>;
  const double none = std::numeric_limits<double>::infinity();
  auto busiest = [&](int64_t first, int64_t last, const Ranks &ranks) {
    Training split = train();
    split.firstStageLayers = first;
    split.lastStageLayers = last;
    std::string error;
    auto ranges = stageLayerRanges(model, int64_t(ranks.size()), split, error);
    if (!ranges)
      return none;
    std::map<int64_t, double> work;
    for (size_t s = 0; s < ranges->size(); ++s)
      for (int64_t r : ranks[s])
        work[r] += model.forwardFlops((*ranges)[s].first, (*ranges)[s].second, 1, seq);
    double most = 0;
    for (const auto &[rank, w] : work)
      most = std::max(most, w);
    return most;
  };
  // Brute force over every first/last pair: the choice is a least busiest rank.
  auto check = [&](const Ranks &ranks) {
    auto [first, last] = balancedStageEnds(model, flopsOf(model), ranks);
    double best = none;
    for (int64_t f = 0; f <= 12; ++f)
      for (int64_t l = 0; l <= 12; ++l)
        best = std::min(best, busiest(f, l, ranks));
    INFO("first " << first << " last " << last);
    if (first >= 0)
      CHECK(busiest(first, last, ranks) == Approx(best));
    return std::make_pair(first, last);
  };
  // 1F1B on 4 ranks: the head's stage takes fewer layers.
  Ranks oneEach{{0}, {1}, {2}, {3}};
  auto [first, last] = check(oneEach);
  REQUIRE(first >= 0);
  CHECK(last < 3);
  CHECK(busiest(first, last, oneEach) < busiest(3, 3, oneEach));
  // DualPipe's placement: rank r runs stages r and P - 1 - r.
  check(Ranks{{0, 3}, {1, 2}, {2, 1}, {3, 0}});
  // One rank runs every stage (a V shape at P = 1): nothing to balance.
  CHECK(balancedStageEnds(model, flopsOf(model), Ranks{{0}, {0}}) == std::pair<int64_t, int64_t>{-1, -1});
  // Work that does not name every layer balances nothing.
  CHECK(balancedStageEnds(model, {1.0, 2.0}, oneEach) == std::pair<int64_t, int64_t>{-1, -1});
  // A small vocabulary: the even split is already as balanced.
  ModelConfig light = parse(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 12, "num_attention_heads": 4, "vocab_size": 2})");
  ModelLayers lightLayers = buildLayers(light);
  CHECK(balancedStageEnds(lightLayers, flopsOf(lightLayers), oneEach) == std::pair<int64_t, int64_t>{-1, -1});
}

TEST_CASE("DeepSeek-style selective recomputation replays the norms, MLA up-projections and SwiGLU", "[plan]") {
  // A small MLA MoE model: q and kv latents, 8 experts, top 2, one shared.
  ModelConfig m = parse(R"({"model_type": "deepseek_v3", "hidden_size": 1024, "intermediate_size": 2048,
    "moe_intermediate_size": 512, "num_hidden_layers": 4, "first_k_dense_replace": 1,
    "num_attention_heads": 8, "num_key_value_heads": 8, "q_lora_rank": 256, "kv_lora_rank": 128,
    "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "v_head_dim": 64, "n_routed_experts": 8,
    "num_experts_per_tok": 2, "n_shared_experts": 1, "vocab_size": 1000})");
  Cluster c = a100();
  Training none = train(), selective = train();
  selective.recompute = Recompute::Selective;
  LayerTime plain = layerTime(m, LayerKind::Moe, c, none, 1);
  LayerTime replayed = layerTime(m, LayerKind::Moe, c, selective, 1);
  CHECK(plain.replayAttention == 0);
  CHECK(plain.replayMlp == 0);
  // The up-projections from the latents: the forward GEMMs of q_b (256 ->
  // 8 x 96) and kv_b (128 -> 8 x (64 + 64)) on 4,096 tokens, plus the norms.
  double T = 4096;
  double upProjections = gemmSeconds(c, T, 8 * 96, 256, false) + gemmSeconds(c, T, 8 * 128, 128, false);
  double norms = memoryBoundSeconds(c, 2 * T * 2 * (2 * 1024 + 256 + 128));
  CHECK(replayed.replayAttention == Approx(upProjections + norms));
  // SwiGLU over the 2 routed copies and the shared expert: read 2i, write i.
  CHECK(replayed.replayMlp == Approx(memoryBoundSeconds(c, T * 2 * 3 * (2 + 1) * 512)));
  // What is replayed is not stored: the selective layer keeps fewer bytes.
  CHECK(layerActivationBytes(m, LayerKind::Moe, selective) < layerActivationBytes(m, LayerKind::Moe, none));
}
