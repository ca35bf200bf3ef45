// Megatron's expert all-to-all overlap (training field ep_comm_overlap,
// plan/EpOverlap.h): off, the planner runs the plain schedule exactly as
// before; on, it runs the overlap form, whose merged steps hide the
// all-to-all; and the field is refused where Megatron refuses it.
#include "plan/EpOverlap.h"
#include "plan/Planner.h"
#include "plan/ScheduleCache.h"

#include "TestSupport.h"

#include <catch2/catch.hpp>

using namespace pipec::plan;

namespace {

const std::string kExamples = PIPEC_EXAMPLES_DIR;

PlanInputs inputsFor(const char *model, int64_t gpus) {
  PlanInputs inputs = pipec::test::h100Inputs(model, gpus);
  inputs.training.globalBatch = 64;
  inputs.training.sequenceLength = 4096;
  return inputs;
}

// One layout of interleaved 1F1B (P 2, v 2, dp 8, ep 8, M 8) on 16 GPUs,
// evaluated from `file`.
std::optional<Candidate> evaluate(const PlanInputs &inputs, const std::string &file, std::string &error) {
  ParallelSizes sizes{2, 8, 8, 8, 2};
  ScheduleCache cache;
  auto compiled = cache.get(file, sizes.pp, sizes.microbatches, sizes.v, inputs.limits, error);
  if (!compiled)
    return std::nullopt;
  return evaluateCompiled(inputs, *compiled, file, sizes, inputs.training, error);
}

} // namespace

TEST_CASE("ep_comm_overlap: off runs the plain schedule, on its overlap form, which hides the all-to-all",
          "[plan]") {
  PlanInputs inputs = inputsFor("deepseek-v2-lite.json", 16);
  inputs.training.recompute = Recompute::Selective;
  std::string plain = kExamples + "/interleaved_1f1b.pipe";
  std::string form = kExamples + "/ep_overlap/interleaved_1f1b.pipe";
  std::string error;
  REQUIRE(epOverlapSchedule(plain, error) == form);
  CHECK(epOverlapSchedule(form, error) == form); // a form is its own form

  std::optional<Candidate> off = evaluate(inputs, plain, error);
  INFO(error);
  REQUIRE(off);
  inputs.training.epCommOverlap = true;
  std::optional<Candidate> on = evaluate(inputs, form, error);
  REQUIRE(on);
  // The stage costs do not change; only the order and the pairs do.
  const StageCost &busiest = on->costs.stages[0];
  REQUIRE(busiest.forwardTime.ep > 0);
  CHECK(busiest.F == off->costs.stages[0].F);
  CHECK(busiest.B == off->costs.stages[0].B);
  CHECK(on->makespan < off->makespan);
  // Hidden at most: the all-to-all of every op of the busiest rank, which
  // bounds what the pairs can save (the extra warm-up forward moves bubbles,
  // so the bound is the whole exposed all-to-all, not a closed form).
  double exposedEp = 0;
  for (const StageCost &st : off->costs.stages)
    exposedEp = std::max(exposedEp, 8 * 2 * (st.forwardTime.ep + st.backwardTime.ep));
  CHECK(on->makespan > off->makespan - exposedEp);

  // Through the planner: off keeps the plain file and its result bit for bit;
  // on searches the form in its place.
  inputs.search.tensorParallel = {1};
  inputs.search.contextParallel = {1};
  inputs.search.microBatchSizes = {1};
  inputs.search.recompute = {Recompute::Selective};
  inputs.search.zeroStages = {1};
  inputs.schedules = {plain};
  inputs.training.epCommOverlap = false;
  PlanResult plainPlan = makePlan(inputs);
  REQUIRE(!plainPlan.candidates.empty());
  for (const Candidate &c : plainPlan.candidates)
    CHECK(c.schedule == plain);
  inputs.training.epCommOverlap = true;
  PlanResult overlapPlan = makePlan(inputs);
  REQUIRE(!overlapPlan.candidates.empty());
  CHECK(overlapPlan.errors.empty());
  for (const Candidate &c : overlapPlan.candidates)
    CHECK(c.schedule == form);
  CHECK(overlapPlan.candidates[0].stepTime < plainPlan.candidates[0].stepTime);
}

TEST_CASE("ep_comm_overlap is refused where Megatron refuses it, naming the field", "[plan]") {
  std::string error;
  // A schedule without an F/B steady state to merge.
  CHECK_FALSE(epOverlapSchedule(kExamples + "/gpipe.pipe", error));
  CHECK_THAT(error, Catch::Contains("ep_comm_overlap: the schedule 'gpipe.pipe' has no expert all-to-all overlap form"));
  CHECK_FALSE(epOverlapSchedule(kExamples + "/dualpipe.pipe", error));

  // A dense model has no all-to-all; ep 1 has none either.
  PlanInputs dense = inputsFor("llama-2-7b.json", 16);
  CHECK_FALSE(epOverlapApplies(dense.config, dense.training, 8, error));
  CHECK_THAT(error, Catch::Contains("ep_comm_overlap: the model (llama) has no experts"));
  PlanInputs moe = inputsFor("deepseek-v2-lite.json", 16);
  CHECK_FALSE(epOverlapApplies(moe.config, moe.training, 1, error));
  CHECK_THAT(error, Catch::Contains("ep_comm_overlap: needs expert parallelism (ep > 1"));
  CHECK(epOverlapApplies(moe.config, moe.training, 8, error));
  // Megatron asserts no full recomputation.
  moe.training.recompute = Recompute::Full;
  CHECK_FALSE(epOverlapApplies(moe.config, moe.training, 8, error));
  CHECK_THAT(error, Catch::Contains("ep_comm_overlap: cannot go with recompute full"));
  CHECK_FALSE(parseTraining(R"({"global_batch": 8, "sequence_length": 128, "recompute": "full",
                                "ep_comm_overlap": true})",
                            "t.json", error));
  CHECK_THAT(error, Catch::Contains("ep_comm_overlap"));
  REQUIRE(parseTraining(R"({"global_batch": 8, "sequence_length": 128, "ep_comm_overlap": true})", "t.json", error));
  CHECK(parseTraining(R"({"global_batch": 8, "sequence_length": 128})", "t.json", error)->epCommOverlap == false);

  // Through the planner: a dense model gets no candidate, the library's other
  // schedules are reported, not searched.
  dense.training.epCommOverlap = true;
  dense.search.tensorParallel = {1};
  dense.search.contextParallel = {1};
  dense.search.microBatchSizes = {1};
  dense.search.recompute = {Recompute::Selective};
  dense.search.zeroStages = {1};
  dense.schedules = {kExamples + "/1f1b.pipe", kExamples + "/gpipe.pipe"};
  PlanResult plan = makePlan(dense);
  CHECK(plan.candidates.empty());
  REQUIRE(plan.errors.size() >= 1);
  CHECK_THAT(plan.errors[0], Catch::Contains("gpipe.pipe: ep_comm_overlap"));
}
