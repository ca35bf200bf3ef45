// The planner's activation peaks per stage (plan/ActivationPeaks.h): a
// hand-derived interleaved 1F1B case, the memory check's own byte accounting
// as the independent reference over the schedule library and over generated
// schedules (ScheduleGenerator.h: linear, V, interleaved and two-flow
// placements, split backwards, overlap pairs), and the memory per GPU they
// give (each in-flight chunk at its own stage's bytes).
#include "plan/ActivationPeaks.h"
#include "plan/StageCosts.h"

#include "ScheduleGenerator.h"
#include "TestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

using namespace pipec;
using namespace pipec::plan;

namespace {

std::vector<std::vector<double>> sorted(std::vector<std::vector<double>> moments) {
  std::sort(moments.begin(), moments.end());
  return moments;
}

} // namespace

TEST_CASE("Activation peaks of interleaved 1F1B, derived by hand", "[plan]") {
  // P = 2, M = 4, v = 2 (G = 2 micro-batches a round). Rank 0 (stages 0 and 2)
  // runs 4 warm-up forwards, F0 F0 F2 F2, then F0 B2 F0 B2 F2 B0 F2 B0 and
  // drains: its live (stage 0, stage 2) counts stop rising at (3, 2) and
  // (4, 1). Rank 1 (stages 1 and 3) runs 2 warm-up forwards, F1 F1, then
  // F3 B3 F3 B3 F1 B1 F1 B1 ...: (2, 1) and (3, 0).
  test::CheckedExample c = test::checkExample("interleaved_1f1b", 2, 4);
  std::vector<RankActivationPeaks> peaks = activationPeaks(c.ir());
  REQUIRE(peaks.size() == 2);
  CHECK(peaks[0].stages == std::vector<int32_t>{0, 2});
  CHECK(sorted(peaks[0].moments) == std::vector<std::vector<double>>{{3, 2}, {4, 1}});
  CHECK(peaks[1].stages == std::vector<int32_t>{1, 3});
  CHECK(sorted(peaks[1].moments) == std::vector<std::vector<double>>{{2, 1}, {3, 0}});
  // The count agrees with the memory check's; the bytes weigh each chunk.
  CHECK(peaks[0].peakCount() == double(c.report.memory[0].peakActivations));
  CHECK(peaks[0].peakCount() == 5);
  CHECK(peaks[0].peakBytes({1, 0, 10, 0}) == 23);  // 3 x 1 + 2 x 10, not 5 x 10
  CHECK(peaks[0].peakBytes({10, 0, 1, 0}) == 41);  // 4 x 10 + 1 x 1
  CHECK(peaks[1].peakBytes({0, 5, 0, 7}) == 17);   // 2 x 5 + 7 beats 3 x 5
  CHECK(peaks[1].peakBytes({0, 0, 0, 0}) == 0);
}

TEST_CASE("Activation peaks match the memory check's byte accounting on the library", "[plan]") {
  // The memory check (check/Memory.cpp) walks every op with activation_bytes
  // per stage: its peakBytes is the reference. Both give each stage random
  // bytes; only activation_bytes is set, so an I frees nothing (as its unit
  // count) and a recomputed forward keeps nothing until its R.
  struct Case {
    const char *name;
    int P, M;
  };
  const Case cases[] = {{"1f1b", 4, 8},           {"gpipe", 3, 5},          {"interleaved_1f1b", 4, 8},
                        {"interleaved_1f1b", 4, 12}, {"interleaved_1f1b", 3, 3}, {"zb_h1", 4, 8},
                        {"zbv", 4, 8},            {"dualpipe", 4, 8},       {"chimera", 4, 8},
                        {"1f1b_recompute", 4, 8}, {"1f1b_offload", 4, 8},   {"hanayo", 4, 8},
                        {"interleaved_zb", 4, 8}};
  std::mt19937 rng(23);
  std::uniform_real_distribution<double> bytes(0, 1000);
  for (const Case &k : cases) {
    INFO(k.name << " P=" << k.P << " M=" << k.M);
    test::CheckedExample c = test::checkExample(k.name, k.P, k.M);
    std::vector<RankActivationPeaks> peaks = activationPeaks(c.ir());
    REQUIRE(peaks.size() == c.report.memory.size());
    for (size_t r = 0; r < peaks.size(); ++r)
      CHECK(peaks[r].peakCount() == double(c.report.memory[r].peakActivations));
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<double> stageBytes(size_t(c.ir().numStages));
      CheckOptions options;
      for (size_t s = 0; s < stageBytes.size(); ++s) {
        // Now and then a stage stores nothing (an embedding-only chunk).
        stageBytes[s] = trial % 3 == 0 && s % 2 == 0 ? 0 : std::round(bytes(rng));
        options.costs.emplace_back("activation_bytes", int64_t(s), stageBytes[s], CostSource::File);
      }
      CheckReport reference = runChecks(c.ir(), options, c.compiled->diags);
      REQUIRE(reference.ok);
      for (size_t r = 0; r < peaks.size(); ++r) {
        INFO("rank " << r << " trial " << trial);
        CHECK(peaks[r].peakBytes(stageBytes) == Approx(reference.memory[r].peakBytes).margin(1e-6));
      }
    }
  }
}

TEST_CASE("Memory per GPU weighs each in-flight chunk by its own stage's activations", "[plan]") {
  // Six layers (embedding, four dense, head) on P = 2, v = 2: stage 0 holds the
  // embedding and one layer, stages 1 and 2 one layer each, stage 3 one layer
  // and the head. Rank 0 (stages 0 and 2) peaks at (3, 2) or (4, 1) as above:
  // 5 layers' activations, where the largest chunk times the peak count gave 5
  // as well; rank 1 (stages 1 and 3) holds the head's once besides.
  ModelConfig config = test::parseModelText(
      R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100})");
  Training tr;
  tr.globalBatch = 8;
  tr.sequenceLength = 16;
  tr.microBatch = 2;
  Cluster cluster = test::roundCluster(2);
  ParallelLayout l;
  l.pipelineRanks = 2;
  l.chunksPerRank = 2;
  l.microbatches = 4;
  l.stageLayers = {{0, 2}, {2, 3}, {3, 4}, {4, 6}};
  l.stageRank = {0, 1, 0, 1};
  test::CheckedExample c = test::checkExample("interleaved_1f1b", 2, 4);
  l.activationPeaks = std::make_shared<const std::vector<RankActivationPeaks>>(activationPeaks(c.ir()));
  std::string error;
  std::optional<PlanCosts> costs = computeCosts(config, buildLayers(config), cluster, tr, l, error);
  INFO(error);
  REQUIRE(costs);
  double layer = layerActivationBytes(config, LayerKind::Dense, tr);
  CHECK(costs->rankMemory[0].activations == Approx(5 * layer));
  double e = 2, tokens = 32, h = 64, vocab = 100;
  double head = 2 * e * tokens * h + 4 * tokens * vocab; // norm and projection inputs, fp32 logits
  CHECK(costs->rankMemory[1].activations == Approx(3 * layer + head));

  // Uneven stages: the embedding alone on stage 0 (Llama 3's first chunk,
  // §3.3.2), two layers on stage 2. Rank 0 peaks at (3, 2) x (0, 2 layers) =
  // 4 layers or (4, 1) = 2 layers: 4 layers, where 5 x its largest chunk
  // (2 layers) said 10.
  l.stageLayers = {{0, 1}, {1, 2}, {2, 4}, {4, 6}};
  costs = computeCosts(config, buildLayers(config), cluster, tr, l, error);
  REQUIRE(costs);
  CHECK(costs->rankMemory[0].activations == Approx(4 * layer));
  // Without the per-stage peaks, the count times the largest chunk (the bound
  // a sketch layout uses).
  l.activationPeaks.reset();
  l.peakActivations = {5, 3};
  costs = computeCosts(config, buildLayers(config), cluster, tr, l, error);
  REQUIRE(costs);
  CHECK(costs->rankMemory[0].activations == Approx(10 * layer));
}

TEST_CASE("Activation peaks match the memory check's byte accounting on generated schedules", "[plan][property]") {
  // The reference walks every op of the rank (check/Memory.cpp); the peaks keep
  // only the undominated moments, so a wrong moment or a wrong prune shows as
  // a peak below the reference, a wrong count as one above it. Schedules the
  // checks refuse (a generated schedule may deadlock) are skipped.
  test::ScheduleGenerator gen(0xf17405u);
  std::mt19937 rng(405);
  std::uniform_real_distribution<double> bytes(0, 1000);
  int compared = 0;
  for (int k = 0; k < 400; ++k) {
    test::GenSchedule g = gen.valid();
    const std::string source = g.source();
    std::unique_ptr<test::Compiled> compiled = test::compile(source);
    REQUIRE(compiled->ir);
    const ScheduleIR &ir = *compiled->ir;
    CheckReport units = runChecks(ir, CheckOptions{}, compiled->diags);
    INFO(g.history << "\n" << source);
    if (!units.ok) // the generator's schedules may deadlock; those have no memory report
      continue;
    std::vector<RankActivationPeaks> peaks = activationPeaks(ir);
    REQUIRE(peaks.size() == units.memory.size());
    std::vector<double> stageBytes(size_t(ir.numStages));
    CheckOptions options;
    for (size_t s = 0; s < stageBytes.size(); ++s) {
      stageBytes[s] = k % 4 == 0 && s == 0 ? 0 : std::round(bytes(rng));
      options.costs.emplace_back("activation_bytes", int64_t(s), stageBytes[s], CostSource::File);
    }
    CheckReport reference = runChecks(ir, options, compiled->diags);
    REQUIRE(reference.ok);
    for (size_t r = 0; r < peaks.size(); ++r) {
      INFO("rank " << r);
      CHECK(peaks[r].peakCount() == double(units.memory[r].peakActivations));
      CHECK(peaks[r].peakBytes(stageBytes) == Approx(reference.memory[r].peakBytes).margin(1e-6));
    }
    ++compared;
  }
  WARN(compared << " of 400 generated schedules compared");
  CHECK(compared >= 300); // most generated schedules pass the checks
}
