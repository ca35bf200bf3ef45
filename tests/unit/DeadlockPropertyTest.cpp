// Property test: the posting order and deadlock analysis agrees with an
// independent brute-force model (BruteForceComm.h) on thousands of random and
// mutated schedules (ScheduleGenerator.h). Deterministic: fixed seed.
#include "BruteForceComm.h"
#include "ScheduleGenerator.h"
#include "TestSupport.h"

#include "check/Checks.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>

using namespace pipec;
using namespace pipec::test;

namespace {

bool isCoverageOrDependencyKind(DiagKind kind) {
  switch (kind) {
  case DiagKind::MissingForward:
  case DiagKind::MissingBackward:
  case DiagKind::DuplicateOp:
  case DiagKind::IWithoutW:
  case DiagKind::DependencyOrder:
  case DiagKind::OverlapDependent:
    return true;
  default:
    return false;
  }
}

char kindChar(OpKind kind) {
  switch (kind) {
  case OpKind::F: return 'F';
  case OpKind::B: return 'B';
  case OpKind::I: return 'I';
  case OpKind::W: return 'W';
  }
  return '?';
}

// The IR the front end made of the generated source holds exactly the ops written.
std::string compareWithGenerated(const GenSchedule &g, const ScheduleIR &ir) {
  if (ir.ranks.size() != g.ranks.size())
    return "rank count differs";
  for (size_t r = 0; r < g.ranks.size(); ++r) {
    std::vector<std::pair<GenOp, PairRole>> expected;
    for (const GenStep &step : g.ranks[r]) {
      if (step.ops.size() == 2) {
        expected.push_back({step.ops[0], PairRole::First});
        expected.push_back({step.ops[1], PairRole::Second});
      } else {
        expected.push_back({step.ops[0], PairRole::None});
      }
    }
    const std::vector<Op> &ops = ir.ranks[r].ops;
    if (ops.size() != expected.size())
      return "rank " + std::to_string(r) + ": op count differs";
    for (size_t i = 0; i < ops.size(); ++i) {
      const GenOp &e = expected[i].first;
      if (kindChar(ops[i].kind) != e.kind || ops[i].chunk != e.chunk || ops[i].microbatch != e.mb ||
          ops[i].pair != expected[i].second)
        return "rank " + std::to_string(r) + " op " + std::to_string(i) + " differs";
    }
  }
  return "";
}

// pipec's CommPlan against the brute-force derivation: the same messages (kind,
// ranks, stage, micro-batch, producing and consuming op and step), the same steps,
// on every channel (sender, receiver, kind) the same order of sends, each rank's
// whole receive posting order (the channels interleaved as each step posts
// them), and the same peak of held messages.
std::string compareWithPlan(const ScheduleIR &ir, const CommPlan &plan, const BfPlan &bf) {
  if (plan.ranks.size() != bf.ranks.size())
    return "rank count differs: pipec " + std::to_string(plan.ranks.size()) + ", brute force " +
           std::to_string(bf.ranks.size());
  auto describe = [](int32_t peer, bool isSend, const BfMessage &m, uint32_t op, uint32_t step) {
    return std::string(isSend ? "send to " : "recv from ") + std::to_string(peer) + " (" +
           m.str() + ", op " + std::to_string(op) + ", step " + std::to_string(step) + ")";
  };
  size_t bfMessages = 0;
  for (size_t r = 0; r < bf.ranks.size(); ++r) {
    const RankComm &rc = plan.ranks[r];
    const BfRank &want = bf.ranks[r];
    const std::string where = "rank " + std::to_string(r) + ": ";
    if (rc.stepOp != want.stepOp)
      return where + "step boundaries differ (pipec " + std::to_string(rc.stepOp.size()) +
             " steps, brute force " + std::to_string(want.stepOp.size()) + ")";
    std::vector<std::string> posted, wantPosted;
    for (uint32_t id : rc.receives) {
      if (id >= plan.messages.size())
        return where + "message id out of range";
      const Message &m = plan.messages[id];
      const Op &producer = plan.producerOp(ir, m);
      BfMessage message{m.kind == MessageKind::Gradient, producer.stage, producer.microbatch};
      posted.push_back(describe(plan.from(m), false, message, m.consumer, m.consumerStep));
    }
    for (const auto &step : want.posted)
      for (const BfCommOp &op : step)
        wantPosted.push_back(describe(op.peer, false, op.message, op.op, op.step));
    for (size_t i = 0; i < std::max(posted.size(), wantPosted.size()); ++i)
      if (i >= posted.size() || i >= wantPosted.size() || posted[i] != wantPosted[i])
        return where + "posted receive #" + std::to_string(i) + ": pipec " +
               (i < posted.size() ? posted[i] : std::string("(none)")) + ", brute force " +
               (i < wantPosted.size() ? wantPosted[i] : std::string("(none)"));
    if (rc.peakHeld != want.peakHeld)
      return where + "peak held messages: pipec " + std::to_string(rc.peakHeld) +
             ", brute force " + std::to_string(want.peakHeld);
    // Sends per channel (receives were compared whole above).
    {
      const bool isSend = true;
      const std::vector<uint32_t> ids =
          isSend ? std::vector<uint32_t>(rc.sends.begin(), rc.sends.end()) : rc.receives;
      // Per channel (peer, kind): pipec's and the brute force's sequences.
      std::map<std::pair<int32_t, bool>, std::vector<std::string>> got, expected;
      for (uint32_t id : ids) {
        if (id >= plan.messages.size())
          return where + "message id out of range";
        const Message &m = plan.messages[id];
        int32_t self = isSend ? plan.from(m) : plan.to(m), peer = isSend ? plan.to(m) : plan.from(m);
        if (self != static_cast<int32_t>(r))
          return where + "lists a message of another rank";
        const Op &producer = plan.producerOp(ir, m);
        BfMessage bm{m.kind == MessageKind::Gradient, producer.stage, producer.microbatch};
        got[{peer, bm.gradient}].push_back(
            describe(peer, isSend, bm, isSend ? m.producer : m.consumer,
                     isSend ? m.producerStep : m.consumerStep));
      }
      const auto &perStep = isSend ? want.sends : want.receives;
      for (const auto &step : perStep)
        for (const BfCommOp &op : step) {
          expected[{op.peer, op.message.gradient}].push_back(
              describe(op.peer, isSend, op.message, op.op, op.step));
          bfMessages += isSend ? 1 : 0;
        }
      if (got != expected) {
        for (auto &kv : expected) {
          const std::vector<std::string> &g = got[kv.first];
          for (size_t i = 0; i < kv.second.size(); ++i)
            if (i >= g.size() || g[i] != kv.second[i])
              return where + (isSend ? "sends" : "receives") + " #" + std::to_string(i) +
                     " on the channel: pipec " + (i < g.size() ? g[i] : std::string("(none)")) +
                     ", brute force " + kv.second[i];
        }
        return where + (isSend ? "sends" : "receives") + ": pipec lists more than the brute force";
      }
    }
  }
  if (plan.messages.size() != bfMessages)
    return "pipec derives " + std::to_string(plan.messages.size()) + " messages, brute force " +
           std::to_string(bfMessages);
  return "";
}

} // namespace

// The brute-force model itself, on schedules small enough to check by hand.
TEST_CASE("brute-force communication model: hand-checked schedules", "[property]") {
  auto planOf = [](const std::string &source) {
    auto c = compile(source);
    REQUIRE(c->ir);
    REQUIRE_FALSE(c->diags.hasErrors());
    return bruteForcePlan(*c->ir);
  };
  auto body = [](const std::string &rank0, const std::string &rank1) {
    return withBody("if r == 0 { " + rank0 + " } else { " + rank1 + " }", 2, 2);
  };
  const BfModel models[] = {BfModel::Channels, BfModel::Groups};

  SECTION("1F1B and GPipe run to the end") {
    BfPlan oneFOneB = planOf(withBody("let w = P - r - 1; for i in 0..w { F; } "
                                      "for i in 0..M - w { F; B; } for i in 0..w { B; }",
                                      4, 8));
    BfPlan gpipe = planOf(withBody("for i in 0..M { F; } for i in 0..M { B; }", 4, 8));
    for (BfModel model : models) {
      BfVerdict a = bruteForceCheck(oneFOneB, model), b = bruteForceCheck(gpipe, model);
      CHECK_FALSE(a.mismatch);
      CHECK_FALSE(a.deadlock);
      CHECK_FALSE(b.mismatch);
      CHECK_FALSE(b.deadlock);
    }
  }
  SECTION("rank 0 waits for a gradient before sending the activation rank 1 waits for") {
    BfPlan plan = planOf(body("F(0, mb = 0); B(0, mb = 0); F(0, mb = 1); B(0, mb = 1);",
                              "F(0, mb = 0); F(0, mb = 1); B(0, mb = 0); B(0, mb = 1);"));
    for (BfModel model : models) {
      BfVerdict v = bruteForceCheck(plan, model);
      CHECK_FALSE(v.mismatch);
      CHECK(v.deadlock);
      // Channels: each rank ran step 0. Groups: each waits in group 1.
      CHECK(v.stuckAt == std::vector<size_t>{1, 1});
    }
  }
  SECTION("two activations consumed in the other order: posted in the sender's, one held") {
    BfPlan plan = planOf(body("F(0, mb = 0); F(0, mb = 1); B(0, mb = 0); B(0, mb = 1);",
                              "F(0, mb = 1); F(0, mb = 0); B(0, mb = 0); B(0, mb = 1);"));
    const BfRank &r1 = plan.ranks[1];
    REQUIRE(r1.posted[0].size() == 2); // both before F(mb 1), micro-batch 0 first
    CHECK(r1.posted[0][0].message == BfMessage{false, 0, 0});
    CHECK(r1.posted[0][0].step == 1);
    CHECK(r1.posted[0][1].message == BfMessage{false, 0, 1});
    CHECK(r1.posted[1].empty());
    CHECK(r1.peakHeld == 1);
    CHECK(plan.ranks[0].peakHeld == 0);
    BfVerdict channels = bruteForceCheck(plan, BfModel::Channels);
    CHECK_FALSE(channels.mismatch);
    CHECK_FALSE(channels.deadlock);
    // Groups match positionally in the consumer's order: the old design's mismatch.
    CHECK(bruteForceCheck(plan, BfModel::Groups).mismatch);
  }
  SECTION("a held message does not help when its sender waits for the receiver") {
    // Rank 1 needs micro-batch 1 first; rank 0 sends it only after B(mb 0),
    // whose gradient rank 1 sends only after F(mb 0): a cycle in any posting order.
    BfPlan plan = planOf(body("F(0, mb = 0); B(0, mb = 0); F(0, mb = 1); B(0, mb = 1);",
                              "F(0, mb = 1); F(0, mb = 0); B(0, mb = 0); B(0, mb = 1);"));
    BfVerdict channels = bruteForceCheck(plan, BfModel::Channels);
    CHECK_FALSE(channels.mismatch);
    CHECK(channels.deadlock);
    CHECK(channels.stuckAt == std::vector<size_t>{1, 0});
  }
  SECTION("an overlap pair waits for both inputs") {
    // Rank 1 pairs F(mb 1) with B(mb 0): 1F1B's steady state.
    BfPlan ok = planOf(body("F(0, mb = 0); F(0, mb = 1); B(0, mb = 0); B(0, mb = 1);",
                            "F(0, mb = 0); F(0, mb = 1) & B(0, mb = 0); B(0, mb = 1);"));
    // Rank 0 pairs them too: B(mb 0) needs rank 1's gradient, which needs F(mb 1)'s
    // activation first -- produced by the very same pair.
    BfPlan stuck = planOf(body("F(0, mb = 0); F(0, mb = 1) & B(0, mb = 0); B(0, mb = 1);",
                               "F(0, mb = 0); F(0, mb = 1) & B(0, mb = 0); B(0, mb = 1);"));
    for (BfModel model : models) {
      BfVerdict a = bruteForceCheck(ok, model), b = bruteForceCheck(stuck, model);
      CHECK_FALSE(a.mismatch);
      CHECK_FALSE(a.deadlock);
      CHECK_FALSE(b.mismatch);
      CHECK(b.deadlock);
      CHECK(b.stuckAt == std::vector<size_t>{1, 1});
    }
  }
  SECTION("two ranks that send before they receive: fine on channels, stuck in groups") {
    // Two flows from both ends. Rank 0's step 0 sends F(0, mb 0)'s activation and
    // rank 1's step 0 sends F(1, mb 2)'s; each receives the other's for step 2.
    // Channels: sends do not hold up compute, so both run on. Groups: group 1 of
    // each rank holds just that send, whose receive the peer posts in group 2.
    BfPlan plan = planOf(R"(
schedule twoflows() {
  ranks 2; stages 2; microbatches 4; copies 2;
  flow down: microbatches 0..2 { place stage s -> rank s chunk 0; }
  flow up: microbatches 2..4 { place stage s -> rank 1 - s chunk 1; }
  rank 0 { F(0, mb = 0); F(0, mb = 1); F(1, mb = 2); F(1, mb = 3);
           B(1, mb = 2); B(1, mb = 3); B(0, mb = 0); B(0, mb = 1); }
  rank 1 { F(1, mb = 2); F(1, mb = 3); F(0, mb = 0); F(0, mb = 1);
           B(0, mb = 0); B(0, mb = 1); B(1, mb = 2); B(1, mb = 3); }
})");
    const BfRank &r0 = plan.ranks[0];
    REQUIRE(r0.stepOp.size() == 8);
    REQUIRE(r0.sends[0].size() == 1);
    CHECK(r0.sends[0][0].peer == 1);
    CHECK(r0.sends[0][0].message == BfMessage{false, 0, 0});
    REQUIRE(r0.receives[2].size() == 1);
    CHECK(r0.receives[2][0].peer == 1);
    CHECK(r0.receives[2][0].message == BfMessage{false, 0, 2});
    REQUIRE(r0.groups.size() == 9);
    REQUIRE(r0.groups[1].size() == 1);
    CHECK(r0.groups[1][0].isSend);
    REQUIRE(r0.groups[2].size() == 2);
    CHECK(r0.groups[2][0].isSend);
    CHECK(r0.groups[2][0].message == BfMessage{false, 0, 1});
    CHECK_FALSE(r0.groups[2][1].isSend);
    CHECK(r0.groups[2][1].message == BfMessage{false, 0, 2});

    BfVerdict channels = bruteForceCheck(plan, BfModel::Channels);
    CHECK_FALSE(channels.mismatch);
    CHECK_FALSE(channels.deadlock);
    BfVerdict groups = bruteForceCheck(plan, BfModel::Groups);
    CHECK_FALSE(groups.mismatch);
    CHECK(groups.deadlock);
    CHECK(groups.stuckAt == std::vector<size_t>{1, 1});
  }
}

TEST_CASE("posting order and deadlock verdicts agree with a brute-force model", "[property]") {
  const auto start = std::chrono::steady_clock::now();
  ScheduleGenerator gen(0x5eed1234u);
  const int kCases = 5000;

  int frontEndRejected = 0, checksRejected = 0, analysed = 0;
  int clean = 0, deadlocks = 0, reordered = 0, reorderedStuck = 0;
  int unmutatedAnalysed = 0, unmutatedDeadlocks = 0, unmutatedRejected = 0;
  int disagreements = 0, planDiffs = 0, irDiffs = 0, inconsistent = 0;
  const int kPrintLimit = 8;

  for (int c = 0; c < kCases; ++c) {
    GenSchedule g = gen.valid();
    int mutations = c % 4 == 0 ? 0 : gen.chance(0.3) ? 2 : 1;
    for (int m = 0; m < mutations; ++m)
      gen.mutate(g);
    g.history = "case " + std::to_string(c) + ": " + g.history;
    const std::string source = g.source();

    auto compiled = compile(source);
    if (!compiled->ir || compiled->diags.hasErrors()) {
      ++frontEndRejected;
      if (mutations == 0) {
        ++unmutatedRejected;
        if (unmutatedRejected <= kPrintLimit)
          FAIL_CHECK("the front end rejects an unmutated generated schedule:\n"
                     << source << compiled->renderedDiagnostics());
      }
      continue;
    }
    const ScheduleIR &ir = *compiled->ir;
    std::string irDiff = compareWithGenerated(g, ir);
    if (!irDiff.empty()) {
      ++irDiffs;
      if (irDiffs <= kPrintLimit)
        FAIL_CHECK("the IR differs from the generated source (" << irDiff << "):\n" << source);
    }

    CheckReport report = runChecks(ir, CheckOptions{}, compiled->diags);
    bool coverageOrDependency = false, pipecDeadlock = false;
    for (const Diagnostic &d : compiled->diags.diagnostics()) {
      coverageOrDependency = coverageOrDependency || isCoverageOrDependencyKind(d.kind);
      pipecDeadlock = pipecDeadlock || d.kind == DiagKind::Deadlock;
    }

    if (!report.comm) {
      ++checksRejected;
      if (mutations == 0) {
        ++unmutatedRejected;
        if (unmutatedRejected <= kPrintLimit)
          FAIL_CHECK("the checks reject an unmutated generated schedule (the generator or the "
                     "coverage/dependency checks are wrong):\n"
                     << source << compiled->renderedDiagnostics());
      }
      if (pipecDeadlock || !coverageOrDependency) {
        ++inconsistent;
        if (inconsistent <= kPrintLimit)
          FAIL_CHECK("no CommPlan, yet " << (coverageOrDependency ? "" : "no coverage/dependency error ")
                                         << (pipecDeadlock ? "[Deadlock] " : "")
                                         << "\n" << source << compiled->renderedDiagnostics());
      }
      continue;
    }
    if (coverageOrDependency) {
      ++inconsistent;
      if (inconsistent <= kPrintLimit)
        FAIL_CHECK("a CommPlan despite coverage/dependency errors:\n"
                   << source << compiled->renderedDiagnostics());
    }

    ++analysed;
    if (mutations == 0)
      ++unmutatedAnalysed;
    BfPlan bfPlan = bruteForcePlan(ir);
    BfVerdict bf = bruteForceCheck(bfPlan);
    // Receives posted in the sender's order: a mismatch is a bug in the model.
    bool expectDeadlock = bf.deadlock;
    bool held = std::any_of(bfPlan.ranks.begin(), bfPlan.ranks.end(),
                            [](const BfRank &rank) { return rank.peakHeld > 0; });
    if (held) {
      ++reordered;
      reorderedStuck += bf.deadlock;
    }
    if (bf.deadlock) {
      ++deadlocks;
      if (mutations == 0)
        ++unmutatedDeadlocks;
    } else {
      ++clean;
    }

    if (bf.mismatch || pipecDeadlock != expectDeadlock) {
      ++disagreements;
      if (disagreements <= kPrintLimit) {
        std::ostringstream why;
        why << "pipec: " << (pipecDeadlock ? "Deadlock " : "clean ") << "\nbrute force: "
            << (bf.mismatch ? "mismatch (" + bf.mismatchDetail + ") " : "")
            << (expectDeadlock ? "deadlock\n" + bf.deadlockDetail : "")
            << (!bf.mismatch && !bf.deadlock ? "clean" : "");
        FAIL_CHECK("verdicts disagree\n" << why.str() << "\nschedule:\n"
                                         << source << "pipec says:\n"
                                         << compiled->renderedDiagnostics());
      }
    }

    std::string planDiff = compareWithPlan(ir, *report.comm, bfPlan);
    if (!planDiff.empty()) {
      ++planDiffs;
      if (planDiffs <= kPrintLimit)
        FAIL_CHECK("CommPlan differs from the brute-force posting order: " << planDiff << "\n"
                                                                           << source);
    }
  }

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ostringstream summary;
  summary << kCases << " schedules in " << seconds << " s: " << frontEndRejected
          << " rejected by the front end, " << checksRejected
          << " by coverage/dependency checks, " << analysed << " analysed (" << clean
          << " deadlock-free, " << deadlocks << " deadlock; " << reordered
          << " hold messages received ahead of their op, of which " << reorderedStuck
          << " deadlock); unmutated: " << unmutatedAnalysed << " analysed, "
          << unmutatedDeadlocks << " deadlock; disagreements " << disagreements
          << ", CommPlan differences " << planDiffs << ", IR differences " << irDiffs
          << ", inconsistent check reports " << inconsistent;
  WARN(summary.str());

  CHECK(unmutatedRejected == 0);
  CHECK(irDiffs == 0);
  CHECK(inconsistent == 0);
  CHECK(planDiffs == 0);
  CHECK(disagreements == 0);
  // Otherwise the generator is too weak to say anything.
  REQUIRE(deadlocks >= 300);
  REQUIRE(clean >= 300);
  REQUIRE(reordered - reorderedStuck >= 100); // orders the old model called mismatches
}
