// pipec synth --exact: on tiny problems its optimum equals a brute force over
// every per-rank order, each written as a .pipe file and judged by pipec check
// (budget, deadlock) and timed by pipec sim; it never loses to the heuristic;
// and no schedule, exact or heuristic, is ever shorter than the lower bound.
#include "frontend/Compilation.h"
#include "sim/Simulator.h"
#include "synth/PlacementFamilies.h"
#include "synth/ExactSearch.h"
#include "synth/ExactSynth.h"
#include "synth/LowerBound.h"
#include "synth/SynthWriter.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <limits>
#include <random>

using namespace pipec;
using namespace pipec::synth;

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

struct Instance {
  SynthProblem problem;
  std::vector<CostOverride> costs; // the same costs, as --cost flags
};

// Random per-stage costs (transfers included) and a random feasible budget.
Instance randomInstance(std::mt19937_64 &rng, PlacementFamily family, int P, int M, int chunks,
                        bool split) {
  Instance x;
  SynthProblem &p = x.problem;
  std::string error;
  p.layout = makeStagePlacement(family, P, chunks, error);
  REQUIRE(error.empty());
  p.microbatches = M;
  p.split = split;
  const int S = p.layout.stages, held = p.layout.chunks;
  p.budget = held + int64_t(rng() % (held * (M - 1) + 1));
  p.costs = {std::vector<double>(S), std::vector<double>(S), std::vector<double>(S),
             std::vector<double>(S)};
  const double forward[] = {0.5, 1, 1.5, 2}, backward[] = {1, 2, 3}, weight[] = {0, 0.5, 1},
               link[] = {0, 0, 0.25, 1};
  for (int s = 0; s < S; ++s) {
    double f = forward[rng() % 4], b = backward[rng() % 3], w = weight[rng() % 3], t = link[rng() % 4];
    x.costs.emplace_back("F", s, f);
    x.costs.emplace_back("B", s, b);
    x.costs.emplace_back("W", s, w);
    x.costs.emplace_back("I", s, b - w);
    x.costs.emplace_back("p2p", s, t);
    p.costs.F[s] = f;
    p.costs.I[s] = split ? b - w : b;
    p.costs.W[s] = split ? w : 0;
    p.costs.transfer[s] = t;
  }
  return x;
}

// pipec check under the budget, then pipec sim; kNever when check refuses it.
double simulated(const Instance &x, const RankOrders &orders) {
  std::string text = writeSynthPipe(x.problem, orders, "brute", {});
  auto c = Compilation::fromText("<brute force>", text);
  CheckOptions options;
  options.maxActivations = x.problem.budget;
  options.costs = x.costs;
  if (!c->runAll(ElabOptions(), options) || c->diags().hasErrors())
    return kNever;
  CostModel model = CostModel::build(*c->ir(), x.costs);
  return simulate(*c->ir(), *c->report(), model).makespan;
}

// Every order of rank r's ops in which each (stage, micro-batch) runs F, I, W in
// that order (I and W together without split), within the budget as it goes.
std::vector<std::vector<int>> rankOrders(const SynthProblem &p, int r) {
  std::vector<std::vector<int>> chains;
  for (int s : p.layout.rankStages[r])
    for (int m = 0; m < p.microbatches; ++m)
      chains.push_back({p.opId(kF, s, m), p.opId(kI, s, m), p.opId(kW, s, m)});
  std::vector<std::vector<int>> all;
  std::vector<size_t> next(chains.size(), 0);
  std::vector<int> order;
  std::function<void(int64_t)> extend = [&](int64_t live) {
    if (order.size() == 3 * chains.size()) {
      all.push_back(order);
      return;
    }
    for (size_t c = 0; c < chains.size(); ++c) {
      if (next[c] == 3)
        continue;
      int id = chains[c][next[c]];
      int kind = p.kindOf(id);
      if (kind == kW && !p.split)
        continue; // placed with its I
      if (kind == kF && live + 1 > p.budget)
        continue;
      size_t take = kind == kI && !p.split ? 2 : 1;
      for (size_t k = 0; k < take; ++k)
        order.push_back(chains[c][next[c] + k]);
      next[c] += take;
      extend(live + (kind == kF ? 1 : kind == kW || take == 2 ? -1 : 0));
      next[c] -= take;
      order.resize(order.size() - take);
    }
  };
  extend(0);
  return all;
}

// The least makespan over every combination of per-rank orders.
double bruteForce(const Instance &x, size_t &candidates) {
  const SynthProblem &p = x.problem;
  std::vector<std::vector<std::vector<int>>> perRank;
  for (int r = 0; r < p.layout.ranks; ++r)
    perRank.push_back(rankOrders(p, r));
  RankOrders orders(p.layout.ranks);
  double best = kNever;
  std::function<void(int)> choose = [&](int r) {
    if (r == p.layout.ranks) {
      ++candidates;
      best = std::min(best, simulated(x, orders));
      return;
    }
    for (const std::vector<int> &order : perRank[r]) {
      orders[r] = order;
      choose(r + 1);
    }
  };
  choose(0);
  return best;
}

ExactResult solve(const SynthProblem &p) {
  return solveExact(p, nullptr, kNever, 0,
                    std::chrono::steady_clock::now() + std::chrono::hours(1));
}

} // namespace

TEST_CASE("exact optimum equals a brute force over every per-rank order, judged by check and "
          "sim", "[synth-exact]") {
  struct Shape {
    PlacementFamily family;
    int P, M, chunks;
    bool split;
    int trials;
  };
  const Shape shapes[] = {
      {PlacementFamily::One, 1, 3, 1, true, 2},   {PlacementFamily::One, 2, 2, 1, true, 6},
      {PlacementFamily::One, 2, 3, 1, false, 2},  {PlacementFamily::One, 3, 2, 1, false, 6},
      {PlacementFamily::One, 3, 2, 1, true, 2},   {PlacementFamily::V, 2, 1, 2, true, 3},
      {PlacementFamily::V, 1, 2, 2, false, 2},    {PlacementFamily::Interleaved, 2, 1, 2, true, 3},
  };
  std::mt19937_64 rng(20261202);
  for (const Shape &shape : shapes)
    for (int trial = 0; trial < shape.trials; ++trial) {
      Instance x = randomInstance(rng, shape.family, shape.P, shape.M, shape.chunks, shape.split);
      const SynthProblem &p = x.problem;
      CAPTURE(int(shape.family), shape.P, shape.M, shape.split, p.budget, trial);
      size_t candidates = 0;
      double brute = bruteForce(x, candidates);
      CAPTURE(candidates, brute);
      ExactResult exact = solve(p);
      REQUIRE(exact.optimal);
      CHECK(exact.makespan == Approx(brute));
      CHECK(exact.bound == Approx(brute));
      CHECK(simulated(x, exact.orders) == Approx(exact.makespan));
      CHECK(lowerBound(p) <= brute + 1e-9);
    }
}

TEST_CASE("exact search stopped at once keeps its start and a proven bound", "[synth-exact]") {
  std::mt19937_64 rng(7);
  Instance x = randomInstance(rng, PlacementFamily::One, 4, 8, 1, true);
  double known = lowerBound(x.problem);
  ExactResult first = solveExact(x.problem, nullptr, kNever, known, std::chrono::steady_clock::now());
  REQUIRE_FALSE(first.optimal);
  if (first.makespan < kNever) {
    CHECK(first.bound <= first.makespan + 1e-9);
    CHECK(simulated(x, first.orders) == Approx(first.makespan));
  }
  CHECK(first.bound >= known);
}

namespace {

SynthRequest randomRequest(std::mt19937_64 &rng, bool small) {
  const PlacementFamily families[] = {PlacementFamily::One, PlacementFamily::V,
                                      PlacementFamily::Interleaved};
  SynthRequest r;
  r.family = families[rng() % 3];
  int chunks = r.family == PlacementFamily::One ? 1 : 2;
  r.ranks = 1 + int(rng() % (small ? 3 : 4));
  r.microbatches = 1 + int(rng() % (small ? 3 : 8));
  r.chunks = 2;
  r.budget = chunks + int64_t(rng() % (chunks * r.microbatches));
  r.split = rng() % 2;
  r.seed = rng();
  r.iterations = 200;
  r.seconds = 4;
  r.commandLine = "pipec synth (unit test)";
  const double costs[] = {0.5, 1, 2, 3};
  r.costs.emplace_back("F", -1, costs[rng() % 4]);
  r.costs.emplace_back("B", -1, costs[rng() % 4] + 1);
  r.costs.emplace_back("W", -1, costs[rng() % 2]);
  r.costs.emplace_back("p2p", -1, costs[rng() % 4] * (rng() % 2));
  return r;
}

} // namespace

TEST_CASE("exact is never worse than the heuristic, and no bound exceeds a schedule",
          "[synth-exact]") {
  std::mt19937_64 rng(20261203);
  for (int trial = 0; trial < 12; ++trial) {
    SynthRequest r = randomRequest(rng, true);
    CAPTURE(trial, int(r.family), r.ranks, r.microbatches, r.budget, r.split);
    ExactOutcome exact = synthesizeExact(r, [](const std::string &) {});
    INFO(exact.synth.error);
    REQUIRE(exact.synth.ok);
    CHECK(exact.synth.makespan <= exact.heuristic + 1e-9);
    CHECK(exact.staticBound <= exact.synth.bound + 1e-9);
    CHECK(exact.synth.bound <= exact.synth.makespan + 1e-9);
    if (exact.optimal)
      CHECK(exact.synth.bound == Approx(exact.synth.makespan));
    // What it writes checks clean under the budget.
    auto c = Compilation::fromText("<exact>", exact.synth.text);
    CheckOptions options;
    options.maxActivations = r.budget;
    options.costs = r.costs;
    REQUIRE(c->runAll(ElabOptions(), options));
  }
}

TEST_CASE("the heuristic never reports a makespan below the lower bound, transfers included",
          "[synth-exact]") {
  std::mt19937_64 rng(20261204);
  for (int trial = 0; trial < 40; ++trial) {
    SynthRequest r = randomRequest(rng, false);
    CAPTURE(trial, int(r.family), r.ranks, r.microbatches, r.budget, r.split);
    SynthOutcome outcome = synthesize(r, [](const std::string &) {});
    INFO(outcome.error);
    REQUIRE(outcome.ok);
    CHECK(outcome.makespan >= outcome.bound - 1e-9);
  }
}

TEST_CASE("the lower bound counts transfers: one micro-batch's round trip", "[synth-exact]") {
  std::string error;
  SynthProblem p;
  p.layout = makeStagePlacement(PlacementFamily::One, 4, 1, error);
  p.microbatches = 1;
  p.split = false;
  p.costs = {std::vector<double>(4, 1), std::vector<double>(4, 2), std::vector<double>(4, 0),
             std::vector<double>(4, 0.5)};
  // 4 F + 4 B, and 3 messages each way.
  CHECK(lowerBound(p) == Approx(4 * 1 + 4 * 2 + 6 * 0.5));
  CHECK(solve(p).makespan == Approx(15));
}

TEST_CASE("the lower bound counts the budget as round trips through a rank", "[synth-exact]") {
  std::string error;
  SynthProblem p;
  p.layout = makeStagePlacement(PlacementFamily::One, 2, 1, error);
  p.microbatches = 3;
  p.budget = 2;
  p.split = false;
  p.costs = {std::vector<double>(2, 1), std::vector<double>(2, 2), std::vector<double>(2, 0),
             std::vector<double>(2, 1)};
  // Rank 0 holds a micro-batch from its F to its B: F, transfer, F, B,
  // transfer, B = 8 at least. Two at a time, so one of its two slots serves
  // two of the three micro-batches: 16 (the rank's work bound is 14).
  CHECK(lowerBound(p) == Approx(16));
  ExactResult exact = solve(p);
  CHECK(exact.optimal);
  CHECK(exact.makespan == Approx(16));
}
