// The planner's search: which layouts it enumerates, how it splits layers over
// stages, how it ranks candidates, and that threads do not change the answer.
#include "plan/Enumerate.h"
#include "plan/Planner.h"
#include "plan/ScheduleCache.h"

#include "TestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>

using namespace pipec::plan;

namespace {

std::vector<int64_t> depths(const std::vector<ParallelSizes> &layouts) {
  std::vector<int64_t> result;
  for (const ParallelSizes &l : layouts)
    result.push_back(l.pp);
  return result;
}

PlanInputs llamaOn(int64_t gpus, double memoryBytes) {
  PlanInputs inputs = pipec::test::h100Inputs("llama-2-7b.json", gpus);
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

  space.microBatchSizes = {0};
  CHECK(enumerateLayouts(space).empty());
}

TEST_CASE("layouts: tensor and context parallel and micro-batch sizes multiply the space",
          "[planner]") {
  LayoutSpace space;
  space.gpus = 16;
  space.layers = 32;
  space.globalBatch = 32;
  space.tensorParallel = {1, 2, 4};
  space.microBatchSizes = {1, 2};
  for (const ParallelSizes &l : enumerateLayouts(space)) {
    CHECK(l.gpus() == 16);
    CHECK(l.microbatches * l.dp * l.mbs == 32);
  }
  // tp 1: P in 1..16 (5) x b (2); tp 2: 4 x 2; tp 4: 3 x 2
  CHECK(enumerateLayouts(space).size() == 24);
  space.contextParallel = {1, 3}; // 3 never divides 16 / t
  CHECK(enumerateLayouts(space).size() == 24);
}

TEST_CASE("divisors are enumerated from the factorisation, not counted", "[planner]") {
  CHECK(divisorsOf(1) == std::vector<int64_t>{1});
  CHECK(divisorsOf(12) == std::vector<int64_t>{1, 2, 3, 4, 6, 12});
  CHECK(divisorsOf(int64_t(1) << 24).size() == 25);
  CHECK(divisorsOf(720720).size() == 240);
  CHECK(divisorsOf(1000000007).size() == 2); // a prime: trial division stops at its root
  CHECK(divisorsOf(0).empty());
  // 2^24 GPUs: the layouts are listed at once, each a factorisation of the GPUs.
  LayoutSpace space;
  space.gpus = int64_t(1) << 24;
  space.layers = 80;
  space.globalBatch = int64_t(1) << 30;
  std::vector<ParallelSizes> layouts = enumerateLayouts(space);
  CHECK(layouts.size() == 7); // P = 1, 2, 4, ..., 64 (each stage needs a layer)
  for (const ParallelSizes &l : layouts)
    CHECK(minimumOps(l) == uint64_t(2) * uint64_t(l.stages()) * uint64_t(l.microbatches));
}

TEST_CASE("the layout arithmetic names what does not divide", "[planner]") {
  std::string error;
  CHECK_FALSE(layoutFor(8, 16, 0, 1, 1, 3, 1, 1, 0, error));
  CHECK(error == "8 GPUs do not split into pipelines of P = 3 ranks");
  CHECK_FALSE(layoutFor(8, 7, 0, 1, 1, 2, 1, 1, 0, error));
  CHECK(error == "--global-batch 7 is not a whole number of micro-batches of 1 over dp = 4 replicas");
  CHECK_FALSE(layoutFor(16, 16, 8, 1, 1, 4, 1, 3, 0, error));
  CHECK(error == "--ep 3 must divide dp = 4 and the 8 routed experts");
  auto l = layoutFor(64, 64, 0, 4, 2, 2, 2, 1, 0, error);
  REQUIRE(l);
  CHECK(l->dp == 4);
  CHECK(l->microbatches == 8);
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

TEST_CASE("pruning keeps the winner, each schedule's best and the kept rows exact", "[planner]") {
  PlanInputs inputs = llamaOn(16, 80e9);
  inputs.search.tensorParallel = {1, 2, 4};
  inputs.search.microBatchSizes = {1, 2};
  inputs.search.recompute = {Recompute::None, Recompute::Selective, Recompute::Full};
  inputs.search.zeroStages = {0, 1};
  inputs.search.keep = 0; // every fitting point simulated
  PlanResult all = makePlan(inputs);
  inputs.search.keep = 3;
  PlanResult pruned = makePlan(inputs);
  REQUIRE(all.recommended);
  REQUIRE(pruned.recommended);
  CHECK(pruned.pruned > 0);
  CHECK(all.pruned == 0);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(pruned.candidates[i].schedule == all.candidates[i].schedule);
    CHECK(pruned.candidates[i].stepTime == all.candidates[i].stepTime);
  }
  // Each schedule's best (the runner-up is one) is the same.
  for (const std::string &file : inputs.schedules) {
    auto bestOf = [&](const PlanResult &r) {
      for (const Candidate &c : r.candidates)
        if (c.schedule == file && c.fits)
          return c.stepTime;
      return -1.0;
    };
    CHECK(bestOf(pruned) == bestOf(all));
  }
  // Every kept candidate is whole: the search varied what it was told to.
  for (const Candidate &c : pruned.candidates) {
    CHECK(c.layout.gpus() == 16);
    CHECK(c.training.tensorParallel == c.layout.tp);
    CHECK(c.training.microBatch == c.layout.mbs);
  }
}

TEST_CASE("a schedule size is compiled once, also across re-plans", "[planner]") {
  PlanInputs inputs = llamaOn(16, 80e9);
  inputs.search.recompute = {Recompute::None, Recompute::Full};
  ScheduleCache cache;
  PlanResult first = makePlan(inputs, &cache);
  REQUIRE(first.compilations > 0);
  // Sizes (file, P, M, v) are distinct per compilation: no more than the groups.
  PlanResult again = makePlan(inputs, &cache);
  CHECK(again.compilations == 0);
  CHECK(again.candidates.size() == first.candidates.size());
  inputs.search.recompute.clear(); // a remedy's change: the same sizes
  inputs.training.recompute = Recompute::Selective;
  CHECK(makePlan(inputs, &cache).compilations == 0);
}

TEST_CASE("numbers that are not finite are refused, not ranked", "[planner]") {
  PlanInputs inputs = llamaOn(16, 80e9);
  inputs.cluster.peakFlops = 1e-300;
  PlanResult plan = makePlan(inputs);
  CHECK(plan.candidates.empty());
  CHECK(!plan.recommended);
  // Refused as non-finite by the planner or as out of range by the model.
  CHECK(plan.nonFinite + plan.refused > 0);
}

TEST_CASE("layouts over --max-ops are refused from their sizes, before elaborating",
          "[planner]") {
  PlanInputs inputs = llamaOn(16, 80e9);
  inputs.training.globalBatch = int64_t(1) << 30;
  PlanResult plan = makePlan(inputs);
  CHECK(plan.layouts > 0);
  CHECK(plan.overOps == plan.layouts);
  CHECK(plan.compilations == 0);
  CHECK(plan.candidates.empty());
}

TEST_CASE("a time budget stops the search and says so", "[planner]") {
  PlanInputs inputs = llamaOn(16, 80e9);
  inputs.search.timeBudgetSeconds = 1e-9;
  PlanResult plan = makePlan(inputs);
  CHECK(plan.timedOut);
  CHECK(plan.notReached > 0);
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

TEST_CASE("a working budget below one schedule compiles one at a time, with the same result",
          "[planner]") {
  PlanInputs inputs = llamaOn(16, 80e9);
  inputs.threads = 4;
  PlanResult free = makePlan(inputs);
  // Nothing kept, and one op of working budget: every compilation waits for
  // the others to end and their schedules to be released (no deadlock), and
  // the search sees the same schedules.
  ScheduleCache tight(0, 1);
  PlanResult bounded = makePlan(inputs, &tight);
  REQUIRE(free.recommended);
  REQUIRE(bounded.recommended);
  CHECK(bounded.candidates.size() == free.candidates.size());
  CHECK(bounded.candidates[0].stepTime == free.candidates[0].stepTime);
  CHECK(bounded.candidates[0].name == free.candidates[0].name);
}

TEST_CASE("a compilation past its deadline stops, and its result is not cached", "[planner]") {
  ScheduleCache cache;
  pipec::ElabLimits limits;
  limits.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  std::string error;
  std::string file = PIPEC_EXAMPLES_DIR "/1f1b.pipe";
  CHECK(!cache.get(file, 4, 20000, 0, limits, error)); // 160K ops: stops in elaboration
  CHECK(error == kPastDeadline);
  CHECK(!cache.contains(file, 4, 20000, 0));
  limits.deadline = std::chrono::steady_clock::time_point::max();
  auto compiled = cache.get(file, 4, 20000, 0, limits, error);
  REQUIRE(compiled);
  CHECK(compiled->ops == 2 * 4 * 20000);
}
