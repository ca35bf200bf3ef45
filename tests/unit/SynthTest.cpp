// pipec synth: whatever it returns checks clean under its budget (checked here
// again, independently of synth's own check) and is never faster than its
// lower bound, on every placement family, with and without pairs; at F=1, B=2
// with whole backwards and 1F1B's budget on one stage per rank, it finds
// 1F1B's makespan, the optimum at that budget, and it finds the library's
// other optimal schedules at P=4.
#include "frontend/Compilation.h"
#include "synth/PlacementFamilies.h"
#include "synth/ChannelRepair.h"
#include "synth/CandidateEvaluator.h"
#include "synth/Synthesize.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
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
                                      PlacementFamily::Interleaved,
                                      PlacementFamily::Bidirectional};
  const double costs[] = {0.5, 1, 2, 3};
  for (int trial = 0; trial < 160; ++trial) {
    PlacementFamily family = families[rng() % 4];
    bool bidirectional = family == PlacementFamily::Bidirectional;
    int P = (bidirectional ? 2 : 1) + int(rng() % 4), M = (bidirectional ? 2 : 1) + int(rng() % 8);
    int chunks = family == PlacementFamily::One || bidirectional ? 1 : 2;
    int64_t budget = chunks + int64_t(rng() % (chunks * M + 1));
    SynthRequest r = request(family, P, M, budget);
    r.seed = rng();
    r.split = rng() % 2;
    r.overlap = rng() % 2;
    r.costs.emplace_back("F", -1, costs[rng() % 4]);
    r.costs.emplace_back("B", -1, costs[rng() % 4] + 1);
    r.costs.emplace_back("W", -1, costs[rng() % 2]);
    if (r.overlap && rng() % 2) // a pair worth between max(F, B) and F + B
      r.costs.emplace_back("FB", -1, 0);
    if (r.overlap && r.costs.back().name == "FB") {
      double F = r.costs[0].value, B = r.costs[1].value;
      r.costs.back().value = std::max(F, B) + (F + B - std::max(F, B)) * double(rng() % 4) / 4;
    }
    CAPTURE(trial, int(family), P, M, budget, r.split, r.overlap);
    SynthOutcome outcome = synthesize(r, quiet);
    INFO(outcome.error);
    REQUIRE(outcome.ok);
    requireChecksClean(outcome, r);
    REQUIRE(outcome.peakActivations <= budget);
    REQUIRE(outcome.makespan >= outcome.bound - 1e-9);
    if (!r.overlap)
      REQUIRE(outcome.text.find('&') == std::string::npos);
  }
}

TEST_CASE("synth finds the library's schedules where the bound proves them optimal", "[synth]") {
  // F=1, B=2, W=1 (per-chunk costs halved for two chunks, the defaults) at P=4:
  // 1F1B 57 at M=16, ZB-H1 27, ZB-V 25.5 and interleaved 1F1B 28.5 at M=8.
  struct Case {
    PlacementFamily family;
    int M;
    int64_t budget;
    bool split;
    double makespan;
  } cases[] = {{PlacementFamily::One, 16, 4, false, 57},
               {PlacementFamily::One, 8, 4, true, 27},
               {PlacementFamily::V, 8, 8, true, 25.5},
               {PlacementFamily::Interleaved, 8, 11, false, 28.5}};
  for (const Case &c : cases) {
    SynthRequest r = request(c.family, 4, c.M, c.budget);
    r.split = c.split;
    CAPTURE(int(c.family), c.M);
    SynthOutcome outcome = synthesize(r, quiet);
    INFO(outcome.error);
    REQUIRE(outcome.ok);
    requireChecksClean(outcome, r);
    CHECK(outcome.makespan == Approx(c.makespan));
  }
}

TEST_CASE("synth on DualPipe's placement is no slower than DualPipe", "[synth]") {
  // DualPipe at P=4, M=8, F=1 B=2 W=1: 26 at its budget P+1, 23 with pairs at
  // FB = 2.25 (pipec sim of examples/dualpipe.pipe); synth does better on both.
  SynthRequest r = request(PlacementFamily::Bidirectional, 4, 8, 5);
  SynthOutcome plain = synthesize(r, quiet);
  REQUIRE(plain.ok);
  requireChecksClean(plain, r);
  CHECK(plain.makespan < 26);
  r.overlap = true;
  r.costs = {{"FB", -1, 2.25}};
  SynthOutcome paired = synthesize(r, quiet);
  REQUIRE(paired.ok);
  requireChecksClean(paired, r);
  CHECK(paired.makespan < 23);
  CHECK(paired.text.find(" & ") != std::string::npos);
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

TEST_CASE("synth's channel repair makes a receiver follow its sender's new order", "[synth]") {
  std::string error;
  SynthProblem p;
  p.layout = makeStagePlacement(PlacementFamily::One, 2, 1, 2, error);
  REQUIRE(error.empty());
  p.microbatches = 2;
  p.budget = 2;
  p.costs = {{1, 1}, {1, 1}, {1, 1}, {0, 0}, {}, {}};
  auto F = [&](int s, int m) { return p.opId(kF, s, m); };
  auto I = [&](int s, int m) { return p.opId(kI, s, m); };
  auto W = [&](int s, int m) { return p.opId(kW, s, m); };
  // Rank 0 now sends micro-batch 1 first; rank 1 still receives 0 first.
  RankOrders orders = {{F(0, 1), F(0, 0), I(0, 0), W(0, 0), I(0, 1), W(0, 1)},
                       {F(1, 0), F(1, 1), I(1, 0), W(1, 0), I(1, 1), W(1, 1)}};
  CandidateEvaluator evaluator(p);
  CHECK(evaluator.makespan(orders) == kInfeasible);
  CHECK(std::string(evaluator.why()) == kChannelOrder);
  REQUIRE(repairChannels(p, orders, 4));
  // Rank 1's receiving forwards keep their places and take rank 0's order;
  // nothing else moves.
  CHECK(orders[1] == std::vector<int>{F(1, 1), F(1, 0), I(1, 0), W(1, 0), I(1, 1), W(1, 1)});
  CHECK(orders[0] == std::vector<int>{F(0, 1), F(0, 0), I(0, 0), W(0, 0), I(0, 1), W(0, 1)});
  CHECK(evaluator.makespan(orders) != kInfeasible);
}

// Issue 26.4: the bound is a proven lower bound whatever the costs: pair costs
// (FB given, or the defaults), W far above B (inconsistent: a pair then costs less
// than its backward alone), tiny and huge W, transfers; every placement family.
TEST_CASE("synth's bound never exceeds its makespan, with pairs and extreme W", "[synth]") {
  std::mt19937_64 rng(20261202);
  const PlacementFamily families[] = {PlacementFamily::One, PlacementFamily::V,
                                      PlacementFamily::Interleaved,
                                      PlacementFamily::Bidirectional};
  const double weights[] = {0, 1e-6, 0.5, 3, 100, 1e4};
  int reproduced = 0;
  for (int trial = 0; trial < 60; ++trial) {
    PlacementFamily family = families[rng() % 4];
    bool bidirectional = family == PlacementFamily::Bidirectional;
    int P = 2 + int(rng() % 3), M = 2 + int(rng() % 7);
    int chunks = family == PlacementFamily::One || bidirectional ? 1 : 2;
    int64_t budget = chunks + int64_t(rng() % (chunks * M + 1));
    SynthRequest r = request(family, P, M, budget);
    r.seed = rng();
    r.iterations = 200;
    r.split = rng() % 2;
    r.overlap = trial % 3 != 0; // mostly with pairs
    r.costs.emplace_back("W", -1, weights[rng() % 6]);
    if (rng() % 2)
      r.costs.emplace_back("B", -1, 1 + double(rng() % 4));
    if (r.overlap && rng() % 2)
      r.costs.emplace_back("FB", -1, 0.5 + double(rng() % 5));
    if (rng() % 3 == 0)
      r.costs.emplace_back("p2p", -1, double(rng() % 3) * 0.25);
    if (trial == 0) { // the reproducer: bidirectional P=4 M=8, budget 5, W=100
      r = request(PlacementFamily::Bidirectional, 4, 8, 5);
      r.overlap = true;
      r.costs = {CostOverride("W", -1, 100)};
      ++reproduced;
    }
    CAPTURE(trial, int(family), P, M, budget, r.split, r.overlap);
    SynthOutcome outcome = synthesize(r, quiet);
    INFO(outcome.error);
    REQUIRE(outcome.ok);
    REQUIRE(std::isfinite(outcome.bound));
    REQUIRE(outcome.bound <= outcome.makespan * (1 + 1e-9) + 1e-12);
  }
  CHECK(reproduced == 1);
}

TEST_CASE("synth names an overflow of its costs", "[synth]") {
  SynthRequest r = request(PlacementFamily::One, 4, 8, 4);
  r.costs = {CostOverride("F", -1, 1e308), CostOverride("B", -1, 1e308)};
  SynthOutcome outcome = synthesize(r, quiet);
  REQUIRE_FALSE(outcome.ok);
  CHECK(outcome.error.find("[NonFiniteResult]") != std::string::npos);
  CHECK(outcome.error.find("raise --max-activations") == std::string::npos);
}

TEST_CASE("synth's --time stops construction after the first schedule, and says so",
          "[synth]") {
  // A deadline already past when construction starts: the first construction
  // still completes (there is an answer), nothing after it runs.
  SynthRequest r = request(PlacementFamily::One, 8, 64, 8);
  r.seconds = 1e-9;
  SynthOutcome outcome = synthesize(r, quiet);
  REQUIRE(outcome.ok);
  CHECK(outcome.stats.timedOut);
  CHECK(outcome.text.find("(stopped by --time)") != std::string::npos);
  requireChecksClean(outcome, r);
}

TEST_CASE("synth passes on the cost warnings of the front end", "[synth]") {
  SynthRequest r = request(PlacementFamily::One, 2, 4, 2);
  r.costs = {CostOverride("W", -1, 100)}; // W above B: the front end warns
  std::vector<std::string> lines;
  SynthOutcome outcome = synthesize(r, [&](const std::string &line) { lines.push_back(line); });
  REQUIRE(outcome.ok);
  CHECK(std::any_of(lines.begin(), lines.end(),
                    [](const std::string &l) { return l.rfind("warning: ", 0) == 0; }));
}
