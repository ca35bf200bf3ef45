// The simulator under real conditions pins its meaning here (issue 24, item 5):
// zero variability is the deterministic run, exactly; a single rank's mean step
// under lognormal jitter is the closed form within a stated sampling bound; a
// straggler on a pure chain adds exactly its extra work; two equal transfers on
// one link each take twice as long, on separate links as long as alone; a seed
// gives the same samples run after run and whatever the thread count.
#include "sim/LinkModel.h"
#include "sim/Variability.h"

#include "TestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace pipec;
using namespace pipec::test;

namespace {

// A checked example and its simulation plan, built once per test.
struct Checked : CheckedExample {
  std::shared_ptr<const SimulationPlan> plan;
};

Checked check(const std::string &name, int P, int M) {
  Checked c{checkExample(name, P, M), nullptr};
  c.plan = std::make_shared<const SimulationPlan>(buildSimulationPlan(c.ir(), *c.report.comm));
  return c;
}

JitterSpec jitter(JitterSpec::Kind kind, double cv) {
  JitterSpec spec;
  spec.kind = kind;
  spec.cv = cv;
  return spec;
}

// The first message rank `rank` sends, which its first step produces.
uint32_t firstMessageOf(const SimulationPlan &plan, size_t rank) {
  uint32_t id = plan.rankMessage[rank];
  REQUIRE(id < plan.rankMessage[rank + 1]);
  REQUIRE(plan.producerStep(plan.comm->messages[id]) == plan.rankStep[rank]);
  return id;
}

} // namespace

TEST_CASE("zero variability is the deterministic simulation, exactly", "[simvar]") {
  for (const char *name : {"1f1b", "zbv", "dualpipe", "dualpipev", "interleaved_1f1b"}) {
    Checked c = check(name, 4, 8);
    CostModel costs = CostModel::build(c.ir(), {{"p2p", -1, 0.125}});
    SimResult plain;
    simulate(c.plan, costs, plain);
    std::vector<double> base = slowedDurations(*c.plan, costs, {});
    for (JitterSpec::Kind kind : {JitterSpec::Kind::LogNormal, JitterSpec::Kind::Normal}) {
      VariabilityResult v = runVariability(c.plan, costs, base, jitter(kind, 0), 5, 42, 2);
      for (double t : v.stepTimes)
        CHECK(t == plain.makespan);
      for (size_t r = 0; r < plain.ranks.size(); ++r)
        CHECK(v.idle[r].max == plain.ranks[r].bubble);
    }
    // Per-step durations equal to the classes' give the plain run to the last bit.
    SimResult given;
    simulate(c.plan, costs, given, {base.data(), nullptr, nullptr});
    CHECK(given.stepEnd == plain.stepEnd);
    CHECK(given.messageArrived == plain.messageArrived);
  }
}

TEST_CASE("one rank's mean step under lognormal jitter is the sum of the means", "[simvar]") {
  // GPipe on one rank: M forwards then M backwards, back to back, so the step is a
  // sum of 2M independent lognormals with means F=1 and B=2 and CV 0.2. Closed form:
  // mean 3M, variance sum (CV cost)^2 = M (0.04 + 0.16). The sample mean of N draws
  // has standard error sqrt(variance / N); the bound is 4 standard errors (a seed
  // that misses it would do so with probability below 1e-4).
  const int M = 16;
  const size_t N = 4000;
  Checked c = check("gpipe", 1, M);
  CostModel costs = CostModel::build(c.ir(), {});
  std::vector<double> base = slowedDurations(*c.plan, costs, {});
  VariabilityResult v = runVariability(c.plan, costs, base, jitter(JitterSpec::Kind::LogNormal, 0.2),
                                       N, 7, 0);
  double mean = 3.0 * M, variance = M * (0.04 + 0.16);
  double standardError = std::sqrt(variance / N);
  CHECK(std::fabs(v.stepTime.mean - mean) <= 4 * standardError);
  // The spread too: the sample standard deviation within 10% of the closed form.
  CHECK(std::fabs(v.stepTime.stddev - std::sqrt(variance)) <= 0.1 * std::sqrt(variance));
  // One rank never waits: its idle time is 0 in every sample.
  CHECK(v.idle[0].max == 0);
}

TEST_CASE("a straggler on a pure chain adds exactly its extra work", "[simvar]") {
  // GPipe with one micro-batch is one chain: F on every rank, then B back. Every
  // op is on the critical path, so rank r slowed by f adds (f - 1) x its work.
  Checked c = check("gpipe", 4, 1);
  CostModel costs = CostModel::build(c.ir(), {{"p2p", -1, 0.25}});
  SimResult plain;
  simulate(c.plan, costs, plain);
  for (int64_t rank = 0; rank < 4; ++rank)
    for (double factor : {1.5, 2.0, 0.5}) {
      std::vector<double> slowed = slowedDurations(*c.plan, costs, {{rank, factor}});
      SimResult result;
      simulate(c.plan, costs, result, {slowed.data(), nullptr, nullptr});
      CHECK(result.makespan - plain.makespan == (factor - 1) * plain.ranks[rank].busy);
    }
  // The sensitivity report says the same for 10%: every rank grows the step by its work / 10.
  std::vector<double> base = slowedDurations(*c.plan, costs, {});
  for (const RankSensitivity &r : rankSensitivity(c.plan, costs, base, 1.1, 2))
    CHECK(r.growth == Approx(0.1 * plain.ranks[r.rank].busy).epsilon(1e-12));
}

TEST_CASE("two equal transfers on one link each take twice as long; apart, as long as alone",
          "[simvar]") {
  // DualPipe at P=4 starts both directions at once: rank 0 and rank 3 finish their
  // first forward at t=1 and each sends an activation (serialisation 1/4: 1 byte
  // at 4 bytes per unit, plus latency 1/8). All four ranks on one node without
  // NVLink between them and one NIC: both messages leave through that NIC, share
  // it, and arrive at 1 + 2 x 1/4 + 1/8. With a NIC per GPU they do not meet.
  Checked c = check("dualpipe", 4, 8);
  CostModel costs = CostModel::build(
      c.ir(), {{"activation_bytes", -1, 1}, {"bandwidth", -1, 4}, {"p2p", -1, 0.125}});
  uint32_t fromFirst = firstMessageOf(*c.plan, 0), fromLast = firstMessageOf(*c.plan, 3);
  SimResult plain;
  simulate(c.plan, costs, plain);
  REQUIRE(plain.stepEnd[c.plan->rankStep[0]] == 1.0);
  REQUIRE(plain.stepEnd[c.plan->rankStep[3]] == 1.0);
  CHECK(plain.messageArrived[fromFirst] == 1.375);

  Topology shared;
  shared.gpusPerNode = 4;
  shared.nvlinkDomain = 1;
  shared.nicsPerNode = 1;
  LinkModel sharedLinks(shared, 4);
  CHECK(sharedLinks.path(0, 1).link[0] == sharedLinks.path(3, 2).link[0]);
  SimResult contended;
  simulate(c.plan, costs, contended, {nullptr, &sharedLinks, nullptr});
  CHECK(contended.messageArrived[fromFirst] == 1.625);
  CHECK(contended.messageArrived[fromLast] == 1.625);
  CHECK(contended.makespan > plain.makespan);

  Topology apart = shared;
  apart.nicsPerNode = 0; // a NIC per GPU
  LinkModel apartLinks(apart, 4);
  SimResult separate;
  simulate(c.plan, costs, separate, {nullptr, &apartLinks, nullptr});
  CHECK(separate.messageArrived[fromFirst] == 1.375);
  CHECK(separate.messageArrived[fromLast] == 1.375);
}

TEST_CASE("links no two messages share leave every result unchanged, bit for bit", "[simvar]") {
  // 1F1B at P=2 under a NIC per GPU: rank 0 sends only on its uplink, rank 1 only on
  // its own; each channel carries one message at a time. The contended loop then
  // reproduces the plain one exactly.
  for (const char *name : {"1f1b", "gpipe"}) {
    Checked c = check(name, 2, 8);
    CostModel costs = CostModel::build(
        c.ir(), {{"activation_bytes", -1, 3}, {"bandwidth", -1, 8}, {"p2p", -1, 0.1}});
    SimResult plain;
    simulate(c.plan, costs, plain);
    Topology topology;
    topology.gpusPerNode = 1;
    LinkModel links(topology, 2);
    SimResult contended;
    simulate(c.plan, costs, contended, {nullptr, &links, nullptr});
    CHECK(contended.makespan == plain.makespan);
    CHECK(contended.stepEnd == plain.stepEnd);
    CHECK(contended.messageArrived == plain.messageArrived);
  }
}

TEST_CASE("a seed gives the same samples run after run and on any number of threads",
          "[simvar]") {
  Checked c = check("dualpipev", 4, 16);
  CostModel costs = CostModel::build(c.ir(), {{"p2p", -1, 0.05}});
  std::vector<double> base = slowedDurations(*c.plan, costs, {{2, 1.1}});
  JitterSpec spec = jitter(JitterSpec::Kind::LogNormal, 0.1);
  VariabilityResult one = runVariability(c.plan, costs, base, spec, 101, 9, 1);
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    VariabilityResult again = runVariability(c.plan, costs, base, spec, 101, 9, threads);
    CHECK(again.stepTimes == one.stepTimes);
    CHECK(again.stepTime.p99 == one.stepTime.p99);
    CHECK(again.idle[3].mean == one.idle[3].mean);
  }
  VariabilityResult other = runVariability(c.plan, costs, base, spec, 101, 10, 2);
  CHECK(other.stepTimes != one.stepTimes);
  // Samples vary, and every percentile lies within the sample's range, in order.
  CHECK(one.stepTime.min < one.stepTime.max);
  CHECK(one.stepTime.min <= one.stepTime.p50);
  CHECK(one.stepTime.p50 <= one.stepTime.p90);
  CHECK(one.stepTime.p90 <= one.stepTime.p99);
  CHECK(one.stepTime.p99 <= one.stepTime.max);
}

TEST_CASE("percentiles are nearest-rank", "[simvar]") {
  std::vector<double> values;
  for (int i = 100; i >= 1; --i)
    values.push_back(i);
  Distribution d = summarize(values);
  CHECK(d.p50 == 50);
  CHECK(d.p90 == 90);
  CHECK(d.p99 == 99);
  CHECK(d.mean == 50.5);
  CHECK(summarize({7}).p99 == 7);
}

TEST_CASE("jitter specs parse or say what they expect", "[simvar]") {
  std::string error;
  CHECK(parseJitter("lognormal:0.1", error)->cv == 0.1);
  CHECK(parseJitter("normal:0", error)->kind == JitterSpec::Kind::Normal);
  CHECK(parseJitter("trace:t.json", error)->traceFile == "t.json");
  CHECK_FALSE(parseJitter("gamma:0.1", error));
  CHECK(error.find("lognormal:CV, normal:CV or trace:FILE") != std::string::npos);
  CHECK_FALSE(parseJitter("lognormal:-1", error));
  CHECK_FALSE(parseJitter("lognormal:nan", error));
  CHECK_FALSE(parseJitter("trace:", error));
}

TEST_CASE("a lognormal draw keeps the cost as its mean and never goes negative", "[simvar]") {
  JitterSpec spec = jitter(JitterSpec::Kind::LogNormal, 0.5);
  JitterSampler sampler(spec);
  SplitMix64 rng(3);
  double sum = 0, smallest = 1;
  const int N = 200000;
  for (int i = 0; i < N; ++i) {
    double m = sampler.multiplier(rng, 0);
    smallest = std::min(smallest, m);
    sum += m;
  }
  CHECK(smallest > 0);
  // Standard error sqrt(0.25 / N) ~ 0.0011; 4 of them.
  CHECK(std::fabs(sum / N - 1) < 0.0045);
}

TEST_CASE("a rank's reduction after its last step shares the NIC it runs on", "[simvar]") {
  // GPipe P=2, M=1: rank 1 ends at 4, rank 0 at 6. Each then reduces its gradients
  // for 3 (at a NIC's full rate). Both on one node with one NIC: rank 1 runs alone
  // from 4 to 6 (2 done), then both at half rate: rank 1 ends at 8, rank 0, 1 done
  // by then, at 10. With a NIC per GPU they do not meet: 9 = makespan + 3.
  Checked c = check("gpipe", 2, 1);
  CostModel costs = CostModel::build(c.ir(), {});
  std::vector<double> traffic = {3, 3};
  Topology oneNic;
  oneNic.gpusPerNode = 2;
  oneNic.nicsPerNode = 1;
  LinkModel shared(oneNic, 2);
  SimResult result;
  simulate(c.plan, costs, result, {nullptr, &shared, traffic.data()});
  CHECK(result.makespan == 6);
  CHECK(result.trafficEnd == 10);
  Topology perGpu = oneNic;
  perGpu.nicsPerNode = 0;
  LinkModel apart(perGpu, 2);
  simulate(c.plan, costs, result, {nullptr, &apart, traffic.data()});
  CHECK(result.trafficEnd == 9);
  // Without rank traffic the step ends with the pipeline.
  simulate(c.plan, costs, result, {nullptr, &apart, nullptr});
  CHECK(result.trafficEnd == result.makespan);
}
