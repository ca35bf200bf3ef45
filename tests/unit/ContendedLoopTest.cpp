// The shared-link loop (sim/ContendedLoop.cpp) against the plain one, over the
// library: with messages that carry no bytes nothing occupies a link, so every
// step end and every arrival must equal the plain loop's bit for bit, whatever
// the topology, copy streams (Offload ... Load) and micro-batch sizes included.
// With bytes on a shared NIC, sharing only delays: every step ends no earlier
// than in the plain loop, and every step runs (the loop never stalls).
#include "sim/LinkModel.h"
#include "sim/Simulator.h"

#include "TestSupport.h"

#include <catch2/catch.hpp>

using namespace pipec;
using namespace pipec::test;

namespace {

struct Case {
  std::string name;
  int P, M;
  bool sized; // with `sizes i -> i % 3 + 1` added to the schedule
};

// examples/NAME.pipe at P and M (sizes added when asked), checked, and its plan.
struct Prepared {
  std::unique_ptr<Compiled> compiled;
  CheckReport report;
  std::shared_ptr<const SimulationPlan> plan;
};

Prepared prepare(const Case &c) {
  std::string source = readExample(c.name);
  if (c.sized) {
    size_t at = source.find("microbatches M;");
    REQUIRE(at != std::string::npos);
    source.insert(at + 15, " sizes i -> i % 3 + 1;");
  }
  ElabOptions options;
  options.defines = {{"P", c.P}, {"M", c.M}};
  Prepared p;
  p.compiled = compile(source, options);
  INFO(p.compiled->renderedDiagnostics());
  REQUIRE(p.compiled->ir);
  p.report = runChecks(*p.compiled->ir, CheckOptions{}, p.compiled->diags);
  REQUIRE(p.report.ok);
  p.plan = std::make_shared<const SimulationPlan>(
      buildSimulationPlan(*p.compiled->ir, *p.report.comm));
  return p;
}

// All ranks on one node behind a single NIC, no NVLink: every message meets every other.
LinkModel oneSharedNic(int ranks) {
  Topology topology;
  topology.gpusPerNode = ranks;
  topology.nvlinkDomain = 1;
  topology.nicsPerNode = 1;
  return LinkModel(topology, ranks);
}

const std::vector<Case> &library() {
  static const std::vector<Case> cases = {
      {"1f1b", 4, 8, false},          {"1f1b", 4, 9, true},
      {"gpipe", 3, 6, false},         {"zb_h1", 4, 8, false},
      {"interleaved_1f1b", 4, 8, false}, {"zbv", 4, 8, false},
      {"dualpipe", 4, 8, false},      {"dualpipev", 4, 8, false},
      {"chimera", 4, 8, false},       {"1f1b_recompute", 4, 8, false},
      {"1f1b_offload", 4, 8, false},  {"1f1b_offload", 5, 11, true},
      {"bpipe", 4, 8, false},         {"bpipe", 6, 12, true},
  };
  return cases;
}

// Case `c` under `costs`, in the plain loop and with every message on one shared NIC.
// The results' plans point into the schedule's CommPlan: it is kept with them.
struct Runs {
  SimResult plain, shared;
  Prepared schedule;
};

Runs runBoth(const Case &c, const std::vector<CostOverride> &overrides) {
  Runs runs{{}, {}, prepare(c)};
  CostModel costs = CostModel::build(*runs.schedule.compiled->ir, overrides);
  simulate(runs.schedule.plan, costs, runs.plain);
  LinkModel links = oneSharedNic(c.P);
  simulate(runs.schedule.plan, costs, runs.shared, {nullptr, &links, nullptr});
  return runs;
}

} // namespace

TEST_CASE("latency-only messages under shared links give the plain loop's numbers exactly",
          "[simvar][contended]") {
  for (const Case &c : library()) {
    INFO(c.name << " P=" << c.P << " M=" << c.M << (c.sized ? " sized" : ""));
    // Evict and Load default to the forward's time without bytes: latency only too.
    auto [plain, shared, schedule] = runBoth(c, {{"activation_bytes", -1, 0},
                                       {"bandwidth", -1, 4},
                                       {"p2p", -1, 0.125},
                                       {"Evict", -1, 0.125},
                                       {"Load", -1, 0.125}});
    CHECK(shared.makespan == plain.makespan);
    CHECK(shared.stepEnd == plain.stepEnd);
    CHECK(shared.messageArrived == plain.messageArrived);
    CHECK(shared.criticalPath.size() == plain.criticalPath.size());
  }
}

TEST_CASE("bytes on a shared NIC only delay, and every step runs", "[simvar][contended]") {
  for (const Case &c : library()) {
    INFO(c.name << " P=" << c.P << " M=" << c.M << (c.sized ? " sized" : ""));
    auto [plain, shared, schedule] =
        runBoth(c, {{"activation_bytes", -1, 1}, {"bandwidth", -1, 2}, {"p2p", -1, 0.125}});
    REQUIRE(shared.stepEnd.size() == plain.stepEnd.size());
    size_t earlier = 0;
    for (size_t k = 0; k < plain.stepEnd.size(); ++k)
      earlier += shared.stepEnd[k] < plain.stepEnd[k] * (1 - 1e-12);
    CHECK(earlier == 0);
    CHECK(shared.makespan >= plain.makespan);
    if (c.P > 1 && plain.messageArrived.size() > 1)
      CHECK(shared.makespan > plain.makespan); // messages do meet on one NIC
  }
}
