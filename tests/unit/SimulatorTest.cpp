// The simulation plan: re-running one plan under new costs gives what a fresh
// simulation gives; the writers refuse times they cannot draw; numbers keep
// their significant digits.
#include "sim/SimOutputs.h"

#include "TestSupport.h"

#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

using namespace pipec;
using namespace pipec::test;

namespace {

using Checked = CheckedExample;

Checked check(const std::string &name, int P, int M) { return checkExample(name, P, M); }

void requireSame(const SimResult &a, const SimResult &b) {
  CHECK(a.makespan == b.makespan);
  REQUIRE(a.stepEnd.size() == b.stepEnd.size());
  for (uint32_t k = 0; k < a.stepEnd.size(); ++k)
    CHECK(a.stepStart(k) == b.stepStart(k));
  CHECK(a.stepEnd == b.stepEnd);
  CHECK(a.messageArrived == b.messageArrived);
  REQUIRE(a.criticalPath.size() == b.criticalPath.size());
  for (size_t i = 0; i < a.criticalPath.size(); ++i)
    CHECK(a.criticalPath[i].step == b.criticalPath[i].step);
}

} // namespace

TEST_CASE("re-simulating one plan under new costs matches a fresh simulation", "[sim]") {
  for (const char *name : {"1f1b", "dualpipe", "dualpipev", "zbv"}) {
    Checked c = check(name, 4, 16);
    auto plan = std::make_shared<const SimulationPlan>(buildSimulationPlan(c.ir(), *c.report.comm));
    SimResult reused;
    for (const std::vector<CostOverride> &costs :
         {std::vector<CostOverride>{}, {{"F", -1, 3}, {"p2p", -1, 0.5}},
          {{"B", 1, 7}, {"W", -1, 0.25}}, {{"attn_f", -1, 1}, {"mlp_b", -1, 2}}, {}}) {
      CostModel model = CostModel::build(c.ir(), costs);
      simulate(plan, model, reused);
      requireSame(reused, simulate(c.ir(), c.report, model));
    }
  }
}

TEST_CASE("a rank's sends are its range of message ids, in step order", "[sim]") {
  Checked c = check("dualpipev", 4, 8);
  SimulationPlan plan = buildSimulationPlan(c.ir(), *c.report.comm);
  const std::vector<Message> &messages = c.report.comm->messages;
  REQUIRE(plan.rankMessage.back() == messages.size());
  for (size_t r = 0; r < plan.numRanks(); ++r)
    for (uint32_t id = plan.rankMessage[r]; id < plan.rankMessage[r + 1]; ++id) {
      CHECK(c.report.comm->from(messages[id]) == int32_t(r));
      if (id > plan.rankMessage[r])
        CHECK(messages[id - 1].producerStep <= messages[id].producerStep);
    }
}

TEST_CASE("a step starts when its rank is free and its last input arrived", "[sim]") {
  Checked c = check("dualpipev", 4, 8);
  SimResult sim = simulate(c.ir(), c.report, CostModel::build(c.ir(), {}));
  const CommPlan &comm = *c.report.comm;
  std::vector<double> latestArrival(sim.stepEnd.size(), 0.0);
  for (uint32_t id = 0; id < comm.messages.size(); ++id) {
    uint32_t consumer = sim.plan->consumerStep(comm.messages[id]);
    latestArrival[consumer] = std::max(latestArrival[consumer], sim.messageArrived[id]);
  }
  for (size_t r = 0; r < sim.ranks.size(); ++r)
    for (uint32_t k = sim.firstStep(r); k < sim.endStep(r); ++k) {
      double free = k > sim.firstStep(r) ? sim.stepEnd[k - 1] : 0.0;
      CHECK(sim.stepStart(k) == std::max(free, latestArrival[k]));
      CHECK(sim.step(k).start <= sim.step(k).end);
    }
}

TEST_CASE("channels get dense ids, one per (sender, receiver, kind)", "[comm]") {
  Checked c = check("dualpipe", 4, 8);
  const CommPlan &comm = *c.report.comm;
  std::map<uint64_t, uint32_t> seen;
  for (const Message &m : comm.messages) {
    REQUIRE(m.channel < comm.numChannels);
    auto [it, inserted] = seen.emplace(comm.channelKey(m), m.channel);
    CHECK(it->second == m.channel);
  }
  CHECK(seen.size() == comm.numChannels);
}

TEST_CASE("pictures and the trace refuse non-finite times instead of looping", "[sim]") {
  Checked c = check("1f1b", 2, 2);
  SimResult sim = simulate(c.ir(), c.report, CostModel::build(c.ir(), {}));
  sim.makespan = std::numeric_limits<double>::infinity();
  sim.stepEnd.back() = sim.makespan;
  std::string text;
  llvm::raw_string_ostream out(text);
  CHECK(undrawableReason(sim) == "the makespan is inf");
  CHECK_FALSE(writeSvg(c.ir(), sim, out));
  CHECK_FALSE(printTimeline(c.ir(), sim, out));
  CHECK_FALSE(writeChromeTrace(c.ir(), c.report, sim, out));
  CHECK(out.str().empty());
  sim.makespan = std::nan("");
  CHECK_FALSE(writeSvg(c.ir(), sim, out));
}

TEST_CASE("numbers keep six significant digits below 1 and stay short when huge", "[sim]") {
  CHECK(formatNumber(3198) == "3198");
  CHECK(formatNumber(2.5) == "2.5");
  CHECK(formatNumber(27.2727) == "27.273");
  CHECK(formatNumber(0.5) == "0.5");
  CHECK(formatNumber(1.0 / 3) == "0.333333");
  CHECK(formatNumber(4e-7) == "4e-07");
  CHECK(formatNumber(0) == "0");
  CHECK(formatNumber(-0.0) == "0");
  CHECK(formatNumber(1e300) == "1e+300");
  CHECK(formatNumber(std::numeric_limits<double>::infinity()) == "inf");
}

TEST_CASE("step classes widen past 16 bits and keep earlier steps", "[sim]") {
  SimulationPlan plan;
  plan.appendStepClass(7);
  plan.appendStepClass(UINT16_MAX);
  CHECK(plan.stepClassWide.empty());
  plan.appendStepClass(UINT16_MAX + 1u);
  plan.appendStepClass(3);
  CHECK(plan.stepClassNarrow.empty());
  CHECK(plan.stepClass(0) == 7);
  CHECK(plan.stepClass(1) == UINT16_MAX);
  CHECK(plan.stepClass(2) == UINT16_MAX + 1u);
  CHECK(plan.stepClass(3) == 3);
}
