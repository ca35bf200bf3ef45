// The planner's search: which layouts it enumerates, how it splits layers over
// stages, how it ranks candidates, and that threads do not change the answer.
#include "plan/Enumerate.h"
#include "plan/Planner.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace pipec::plan;

namespace {

std::vector<int64_t> depths(const std::vector<ParallelSizes> &layouts) {
  std::vector<int64_t> result;
  for (const ParallelSizes &l : layouts)
    result.push_back(l.pp);
  return result;
}

PlanInputs llamaOn(int64_t gpus, double memoryBytes) {
  std::string error;
  PlanInputs inputs;
  auto config = readModelConfig(PIPEC_PLAN_INPUTS_DIR "/hf/llama-2-7b.json", error);
  INFO(error);
  REQUIRE(config);
  inputs.config = *config;
  inputs.model = buildLayers(inputs.config);
  inputs.cluster = *clusterPreset("h100");
  inputs.cluster.gpus = gpus;
  inputs.cluster.memoryBytes = memoryBytes;
  inputs.training.globalBatch = 32;
  inputs.training.sequenceLength = 1024;
  for (const char *name : {"1f1b", "zbv", "interleaved_1f1b", "dualpipe"})
    inputs.schedules.push_back(std::string(PIPEC_EXAMPLES_DIR "/") + name + ".pipe");
  return inputs;
}

} // namespace

TEST_CASE("layouts: P divides the GPUs, M is whole, ep divides dp and the experts", "[planner]") {
  LayoutSpace space;
  space.gpus = 16;
  space.layers = 32;
  space.globalBatch = 32;
  std::vector<ParallelSizes> dense = enumerateLayouts(space);
  CHECK(depths(dense) == std::vector<int64_t>{1, 2, 4, 8, 16});
  for (const ParallelSizes &l : dense) {
    CHECK(l.pp * l.dp == 16);
    CHECK(l.microbatches * l.dp == 32);
    CHECK(l.ep == 1);
    CHECK(l.v == 0);
  }

  space.globalBatch = 8; // P = 1 would need 16 replicas of 8 sequences: not whole
  CHECK(depths(enumerateLayouts(space)) == std::vector<int64_t>{2, 4, 8, 16});

  space.globalBatch = 32;
  space.experts = 8; // ep in {1, 2, 4, 8} where it divides dp
  size_t withExperts = 0;
  for (const ParallelSizes &l : enumerateLayouts(space)) {
    CHECK(l.dp % l.ep == 0);
    CHECK(8 % l.ep == 0);
    withExperts += l.pp == 4; // dp = 4: ep = 1, 2, 4
  }
  CHECK(withExperts == 3);

  space.experts = 0;
  space.layers = 12;
  space.hasV = true;
  space.vValues = {2, 4};
  for (const ParallelSizes &l : enumerateLayouts(space))
    CHECK(l.pp * l.v <= 12); // every stage holds a layer
  CHECK(enumerateLayouts(space).size() == 5); // (1,2) (1,4) (2,2) (2,4) (4,2)

  space.microBatchSize = 0;
  CHECK(enumerateLayouts(space).empty());
}

TEST_CASE("layers split contiguously, the spare ones after the first stage", "[planner]") {
  ModelLayers model;
  model.layers.resize(61 + 2); // DeepSeek-V3: 61 layers, embedding and head
  auto ranges = splitLayers(model, 16);
  REQUIRE(ranges.size() == 16);
  CHECK(ranges.front().first == 0);
  CHECK(ranges.back().second == 63);
  for (size_t s = 1; s < ranges.size(); ++s)
    CHECK(ranges[s].first == ranges[s - 1].second);
  CHECK(ranges[0].second - ranges[0].first == 4);   // embedding + 3
  CHECK(ranges[1].second - ranges[1].first == 4);   // one of the 13 spare layers
  CHECK(ranges[13].second - ranges[13].first == 4);
  CHECK(ranges[14].second - ranges[14].first == 3);
  CHECK(ranges[15].second - ranges[15].first == 4); // 3 + head
  CHECK(splitLayers(model, 62).empty());             // a stage without a layer
}

TEST_CASE("candidates rank by step time among those that fit, the same on any thread count",
          "[planner]") {
  PlanInputs inputs = llamaOn(16, 80e9);
  inputs.threads = 1;
  PlanResult one = makePlan(inputs);
  inputs.threads = 4;
  PlanResult four = makePlan(inputs);
  REQUIRE(one.errors.empty());
  REQUIRE(one.candidates.size() == four.candidates.size());
  REQUIRE(one.recommended == size_t(0));
  for (size_t i = 0; i < one.candidates.size(); ++i) {
    const Candidate &c = one.candidates[i];
    CHECK(c.schedule == four.candidates[i].schedule);
    CHECK(c.stepTime == four.candidates[i].stepTime);
    CHECK(c.fits == (c.memory.total <= 80e9));
    CHECK(c.stepTime == Approx(c.makespan + c.tailSeconds));
    if (i > 0 && c.fits)
      CHECK(one.candidates[i - 1].stepTime <= c.stepTime);
    if (i > 0 && one.candidates[i - 1].fits != c.fits)
      CHECK(one.candidates[i - 1].fits); // fitting ones first
    // The schedule was elaborated at the layout's P and M.
    CHECK(std::count(c.params.begin(), c.params.end(), std::make_pair(std::string("P"), c.layout.pp)) == 1);
    CHECK(std::count(c.params.begin(), c.params.end(), std::make_pair(std::string("M"), c.layout.microbatches)) == 1);
  }
}

TEST_CASE("nothing fits: re-planning with one change at a time finds what would", "[planner]") {
  PlanInputs inputs = llamaOn(8, 20e9);
  PlanResult plan = makePlan(inputs);
  CHECK(!plan.recommended);
  CHECK(!plan.candidates.empty());
  std::vector<Remedy> remedies = findRemedies(inputs);
  bool moreGpus = false;
  for (const Remedy &r : remedies)
    if (r.best) {
      CHECK(r.best->fits);
      moreGpus |= r.change.rfind("--gpus ", 0) == 0;
    }
  CHECK(moreGpus);
}
