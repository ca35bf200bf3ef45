// The two-stream plan of an overlap pair, against a plan worked out by hand.
#include "cost/CostModel.h"

#include "TestSupport.h"

#include <catch2/catch.hpp>

using namespace pipec;
using namespace pipec::test;

static CostModel modelFor(const std::vector<CostOverride> &costs) {
  static auto compiled = compile(withBody("F; B;", 1, 1));
  return CostModel::build(*compiled->ir, costs);
}

TEST_CASE("an overlap pair hides each chunk's all-to-all under the other's compute", "[sim]") {
  // Forward: attention 1, dispatch 1, MLP 1, combine 1. Backward: combine 1,
  // MLP 2, dispatch 1, attention 2. By hand, compute runs A_f [0,1] M_b [1,3]
  // M_f [3,4] A_b [4,6] back to back while C_b, D_f, D_b, C_f fit on the
  // communication stream: 6, the compute total, against 10 run serially.
  CostModel costs = modelFor({{"attn_f", -1, 1}, {"dispatch_f", -1, 1}, {"mlp_f", -1, 1},
                              {"combine_f", -1, 1}, {"attn_b", -1, 2}, {"dispatch_b", -1, 1},
                              {"mlp_b", -1, 2}, {"combine_b", -1, 1}});
  OverlapPlan plan = planOverlap(costs, 0, 0);
  CHECK(plan.makespan == 6);
  REQUIRE(plan.subOps.size() == 8);
  double computeBusy = 0;
  for (const PlannedSubOp &op : plan.subOps)
    if (!op.onCommStream)
      computeBusy += op.end - op.start;
  CHECK(computeBusy == 6);
  // No two sub-ops overlap on one stream, and each chain keeps its order.
  for (size_t i = 0; i < plan.subOps.size(); ++i)
    for (size_t j = i + 1; j < plan.subOps.size(); ++j)
      if (plan.subOps[i].onCommStream == plan.subOps[j].onCommStream)
        CHECK((plan.subOps[i].end <= plan.subOps[j].start ||
               plan.subOps[j].end <= plan.subOps[i].start));
  CHECK(costs.pair(0, OpKind::B, 0) == 6);
}

TEST_CASE("communication-bound pairs take the communication total", "[sim]") {
  CostModel costs = modelFor({{"attn_f", -1, 1}, {"dispatch_f", -1, 4}, {"mlp_f", -1, 1},
                              {"combine_f", -1, 4}, {"attn_b", -1, 1}, {"dispatch_b", -1, 4},
                              {"mlp_b", -1, 1}, {"combine_b", -1, 4}});
  // 16 units of all-to-all can never hide under 4 of compute.
  CHECK(planOverlap(costs, 0, 0).makespan >= 16);
}

TEST_CASE("FB, when given, wins over the plan; without either a pair costs F + B", "[sim]") {
  CHECK(modelFor({}).pair(0, OpKind::B, 0) == 3);
  CHECK(modelFor({{"I", -1, 0.5}}).pair(0, OpKind::I, 0) == 1.5);
  CHECK(modelFor({{"FB", -1, 2.5}, {"attn_f", -1, 9}}).pair(0, OpKind::B, 0) == 2.5);
}
