// pipec synth: whatever it returns checks clean under its budget (checked here
// again, independently of synth's own check) and is never faster than its
// lower bound; at F=1, B=2 with whole backwards and 1F1B's budget on one stage
// per rank, it finds 1F1B's makespan, the optimum at that budget.
#include "driver/Compilation.h"
#include "synth/Synthesize.h"

#include <catch2/catch.hpp>

#include <random>

using namespace pipec;
using namespace pipec::synth;

namespace {

SynthRequest request(PlacementFamily family, int P, int M, int64_t budget) {
  SynthRequest r;
  r.family = family;
  r.ranks = P;
  r.microbatches = M;
  r.budget = budget;
  r.iterations = 300;
  r.seconds = 30;
  r.commandLine = "pipec synth (unit test)";
  return r;
}

void quiet(const std::string &) {}

// Checks the text as `pipec check --max-activations budget` would.
void requireChecksClean(const SynthOutcome &outcome, const SynthRequest &r) {
  auto compilation = Compilation::fromText("<synth test>", outcome.text);
  CheckOptions options;
  options.maxActivations = r.budget;
  options.costs = r.costs;
  INFO(outcome.text);
  REQUIRE(compilation->runAll(ElabOptions(), options));
  REQUIRE_FALSE(compilation->diags().hasErrors());
  for (const RankMemory &m : compilation->report()->memory)
    REQUIRE(m.peakActivations <= r.budget);
}

} // namespace

TEST_CASE("synth output checks clean within its budget and above its bound", "[synth]") {
  std::mt19937_64 rng(20261201);
  const PlacementFamily families[] = {PlacementFamily::One, PlacementFamily::V,
                                      PlacementFamily::Interleaved};
  const double costs[] = {0.5, 1, 2, 3};
  for (int trial = 0; trial < 120; ++trial) {
    PlacementFamily family = families[rng() % 3];
    int P = 1 + int(rng() % 4), M = 1 + int(rng() % 8);
    int chunks = family == PlacementFamily::One ? 1 : 2;
    int64_t budget = chunks + int64_t(rng() % (chunks * M + 1));
    SynthRequest r = request(family, P, M, budget);
    r.seed = rng();
    r.split = rng() % 2;
    r.costs.emplace_back("F", -1, costs[rng() % 4]);
    r.costs.emplace_back("B", -1, costs[rng() % 4] + 1);
    r.costs.emplace_back("W", -1, costs[rng() % 2]);
    CAPTURE(trial, int(family), P, M, budget, r.split);
    SynthOutcome outcome = synthesize(r, quiet);
    INFO(outcome.error);
    REQUIRE(outcome.ok);
    requireChecksClean(outcome, r);
    REQUIRE(outcome.peakActivations <= budget);
    REQUIRE(outcome.makespan >= outcome.bound - 1e-9);
  }
}

TEST_CASE("synth finds 1F1B's makespan at 1F1B's budget", "[synth]") {
  for (int P : {1, 2, 4, 8})
    for (int M : {P, 2 * P, 4 * P}) {
      SynthRequest r = request(PlacementFamily::One, P, M, P);
      r.split = false;
      r.costs = {{"F", -1, 1}, {"B", -1, 2}};
      CAPTURE(P, M);
      SynthOutcome outcome = synthesize(r, quiet);
      INFO(outcome.error);
      REQUIRE(outcome.ok);
      requireChecksClean(outcome, r);
      CHECK(outcome.makespan == Approx(3.0 * (M + P - 1)));
      CHECK(outcome.bound == Approx(3.0 * (M + P - 1))); // the bound is tight here
    }
}

TEST_CASE("synth is deterministic for a seed", "[synth]") {
  SynthRequest r = request(PlacementFamily::V, 3, 6, 5);
  r.seed = 7;
  SynthOutcome a = synthesize(r, quiet), b = synthesize(r, quiet);
  REQUIRE(a.ok);
  REQUIRE(b.ok);
  CHECK(a.makespan == b.makespan);
  auto body = [](const std::string &text) { return text.substr(text.find("schedule ")); };
  CHECK(body(a.text) == body(b.text));
}

TEST_CASE("synth refuses a budget below a rank's chunks", "[synth]") {
  SynthOutcome outcome = synthesize(request(PlacementFamily::V, 2, 4, 1), quiet);
  CHECK_FALSE(outcome.ok);
  CHECK(outcome.error.find("budget") != std::string::npos);
}

TEST_CASE("synth's bound counts the budget: one activation per rank is one round trip per "
          "micro-batch", "[synth]") {
  SynthRequest r = request(PlacementFamily::One, 3, 4, 1);
  r.split = false;
  r.costs = {{"F", -1, 1}, {"B", -1, 2}};
  SynthOutcome outcome = synthesize(r, quiet);
  REQUIRE(outcome.ok);
  requireChecksClean(outcome, r);
  CHECK(outcome.bound == Approx(4 * 9.0)); // M * (3 F + 3 B)
  CHECK(outcome.makespan == Approx(4 * 9.0));
}
