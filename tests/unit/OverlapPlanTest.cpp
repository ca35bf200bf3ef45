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

TEST_CASE("communication holding SMs slows the compute it overlaps", "[sim]") {
  // The first case's pair with half the SMs held by communication. By hand:
  // C_b [0,1] under A_f, which does half its work by 1 and ends at 1.5; M_b
  // [1.5,4] (D_f [1.5,2.5] takes half its speed for 1); M_f [4,5.5] (D_b
  // [4,5]); A_b [5.5,8] (C_f [5.5,6.5]). Every all-to-all still hides, but each
  // second of it costs the compute under it half a second: 6 + 0.5 x 4 = 8.
  CostModel costs = modelFor({{"attn_f", -1, 1}, {"dispatch_f", -1, 1}, {"mlp_f", -1, 1},
                              {"combine_f", -1, 1}, {"attn_b", -1, 2}, {"dispatch_b", -1, 1},
                              {"mlp_b", -1, 2}, {"combine_b", -1, 1}, {"comm_sm_share", -1, 0.5}});
  CHECK(costs.commSmShare(0) == 0.5);
  OverlapPlan plan = planOverlap(costs, 0, 0);
  CHECK(plan.makespan == 8);
  CHECK(costs.pair(0, OpKind::B, 0) == 8);
  REQUIRE(plan.subOps.size() == 8);
  // Communication keeps its durations (link-bound).
  for (const PlannedSubOp &op : plan.subOps)
    if (op.onCommStream)
      CHECK(op.end - op.start == 1);
}

// Against an independent accounting: a compute sub-op from start to end at
// speed 1 - share while any communication sub-op runs and 1 otherwise must do
// exactly its cost of work; streams stay serial, chains keep their order.
TEST_CASE("a contended plan does each compute sub-op's work, no more, no less", "[sim]") {
  static const SubOp kForward[kSubOps] = {SubOp::Attention, SubOp::Dispatch, SubOp::Mlp, SubOp::Combine};
  static const SubOp kBackward[kSubOps] = {SubOp::Combine, SubOp::Mlp, SubOp::Dispatch, SubOp::Attention};
  uint32_t seed = 12345;
  auto next = [&] {
    seed = seed * 1664525u + 1013904223u;
    return double(seed >> 8) / double(1u << 24);
  };
  for (int trial = 0; trial < 2000; ++trial) {
    SubOpDurations f{}, b{};
    for (int k = 0; k < kSubOps; ++k) {
      f[size_t(k)] = next() < 0.1 ? 0 : 0.1 + 3 * next();
      b[size_t(k)] = next() < 0.1 ? 0 : 0.1 + 3 * next();
    }
    double share = trial % 5 == 0 ? 0 : 0.9 * next();
    OverlapPlan plan = planOverlap(f, b, share);
    OverlapPlan plain = planOverlap(f, b, 0);
    REQUIRE(plan.subOps.size() == size_t(2 * kSubOps));
    // No share is the plain plan, exactly. (A larger share need not lengthen
    // the pair: a greedy list schedule is not monotone in its durations, as
    // Graham showed; slower compute can reorder it into a shorter plan.)
    if (share == 0)
      CHECK(plan.makespan == plain.makespan);
    double computeWork = 0, commTotal = 0, computeBusy = 0;
    size_t seen[2] = {0, 0};
    double chainEnd[2] = {0, 0};
    for (const PlannedSubOp &op : plan.subOps) {
      int backward = op.forward ? 0 : 1;
      REQUIRE(seen[backward] < size_t(kSubOps));
      CHECK(op.op == (backward ? kBackward : kForward)[seen[backward]++]);
      CHECK(op.start >= chainEnd[backward] - 1e-12);
      chainEnd[backward] = op.end;
      double cost = (backward ? b : f)[static_cast<size_t>(op.op)];
      CHECK(op.end <= plan.makespan);
      if (op.onCommStream) {
        CHECK(op.end - op.start == Approx(cost).margin(1e-12));
        commTotal += cost;
        continue;
      }
      computeWork += cost;
      computeBusy += op.end - op.start;
      // Overlap with communication (serial on its stream: a plain sum).
      double overlapped = 0;
      for (const PlannedSubOp &other : plan.subOps)
        if (other.onCommStream)
          overlapped += std::max(0.0, std::min(op.end, other.end) - std::max(op.start, other.start));
      double work = (op.end - op.start) - share * overlapped;
      CHECK(work == Approx(cost).margin(1e-9));
    }
    // Each stream is serial: the pair lasts at least its busier stream, and the
    // compute stream is busy at least its work.
    CHECK(computeBusy >= computeWork - 1e-9);
    CHECK(plan.makespan >= computeBusy - 1e-9);
    CHECK(plan.makespan >= commTotal - 1e-9);
    for (size_t i = 0; i < plan.subOps.size(); ++i)
      for (size_t j = i + 1; j < plan.subOps.size(); ++j)
        if (plan.subOps[i].onCommStream == plan.subOps[j].onCommStream)
          CHECK((plan.subOps[i].end <= plan.subOps[j].start + 1e-12 ||
                 plan.subOps[j].end <= plan.subOps[i].start + 1e-12));
  }
}
