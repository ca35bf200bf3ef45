// Property test: the message-order and deadlock analysis agrees with an
// independent brute-force model (BruteForceComm.h) on thousands of random and
// mutated schedules (ScheduleGenerator.h). Deterministic: fixed seed.
#include "BruteForceComm.h"
#include "ScheduleGenerator.h"
#include "TestSupport.h"

#include "check/Checks.h"

#include <catch2/catch.hpp>

#include <chrono>
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

// pipec's CommPlan against the brute-force posting sequence, group by group.
std::string compareWithPlan(const CommPlan &plan, const BfPlan &bf) {
  if (plan.ranks.size() != bf.ranks.size())
    return "rank count differs: pipec " + std::to_string(plan.ranks.size()) + ", brute force " +
           std::to_string(bf.ranks.size());
  for (size_t r = 0; r < bf.ranks.size(); ++r) {
    const RankComm &rc = plan.ranks[r];
    const std::vector<std::vector<BfCommOp>> &groups = bf.ranks[r].groups;
    if (rc.groupBegin.empty() || rc.groupCount() != groups.size())
      return "rank " + std::to_string(r) + ": pipec has " +
             std::to_string(rc.groupBegin.empty() ? 0 : rc.groupCount()) +
             " groups, brute force " + std::to_string(groups.size());
    if (rc.stepOp.size() + 1 != groups.size())
      return "rank " + std::to_string(r) + ": pipec has " + std::to_string(rc.stepOp.size()) +
             " steps, brute force " + std::to_string(groups.size() - 1);
    for (size_t g = 0; g < groups.size(); ++g) {
      uint32_t begin = rc.groupBegin[g], end = rc.groupBegin[g + 1];
      if (end < begin || end > rc.ops.size() || end - begin != groups[g].size())
        return "rank " + std::to_string(r) + " group " + std::to_string(g) + ": pipec has " +
               std::to_string(end - begin) + " ops, brute force " + std::to_string(groups[g].size());
      for (size_t i = 0; i < groups[g].size(); ++i) {
        const CommOp &op = rc.ops[begin + i];
        const Message &m = plan.messages[op.message];
        const BfCommOp &want = groups[g][i];
        int32_t peer = op.isSend ? m.to : m.from;
        int32_t self = op.isSend ? m.from : m.to;
        BfMessage got{m.kind == MessageKind::Gradient, m.stage, m.microbatch};
        if (op.isSend != want.isSend || peer != want.peer || self != static_cast<int32_t>(r) ||
            got != want.message)
          return "rank " + std::to_string(r) + " group " + std::to_string(g) + " op " +
                 std::to_string(i) + ": pipec " + (op.isSend ? "send to " : "recv from ") +
                 std::to_string(peer) + " (" + got.str() + "), brute force " +
                 (want.isSend ? "send to " : "recv from ") + std::to_string(want.peer) + " (" +
                 want.message.str() + ")";
      }
    }
  }
  return "";
}

} // namespace

// The brute-force model itself, on schedules small enough to check by hand.
TEST_CASE("brute-force communication model: hand-checked schedules", "[property]") {
  auto verdictOf = [](const std::string &body, int P, int M) {
    auto c = compile(withBody(body, P, M));
    REQUIRE(c->ir);
    REQUIRE_FALSE(c->diags.hasErrors());
    return bruteForceCheck(*c->ir);
  };
  SECTION("1F1B and GPipe run to the end") {
    BfVerdict oneFOneB = verdictOf("let w = P - r - 1; for i in 0..w { F; } "
                                   "for i in 0..M - w { F; B; } for i in 0..w { B; }",
                                   4, 8);
    CHECK_FALSE(oneFOneB.mismatch);
    CHECK_FALSE(oneFOneB.deadlock);
    BfVerdict gpipe = verdictOf("for i in 0..M { F; } for i in 0..M { B; }", 4, 8);
    CHECK_FALSE(gpipe.mismatch);
    CHECK_FALSE(gpipe.deadlock);
  }
  SECTION("rank 0 waits for a gradient before sending the activation rank 1 waits for") {
    // rank 0: group 1 = {send act mb0, recv grad mb0}; rank 1 wants act mb1 first.
    BfVerdict v = verdictOf("if r == 0 { F(0, mb = 0); B(0, mb = 0); F(0, mb = 1); B(0, mb = 1); }"
                            "else { F(0, mb = 0); F(0, mb = 1); B(0, mb = 0); B(0, mb = 1); }",
                            2, 2);
    CHECK_FALSE(v.mismatch);
    CHECK(v.deadlock);
    CHECK(v.stuckAt == std::vector<size_t>{1, 1});
  }
  SECTION("two ranks that both send first and receive later block in their sends") {
    // Two flows from both ends. Group 1 of rank 0 holds only the send of F(0, mb 0)'s
    // activation, group 1 of rank 1 only that of F(1, mb 2); each rank posts the
    // receive of the other's message in group 2. No buffering: both wait forever.
    auto c = compile(R"(
schedule twoflows() {
  ranks 2; stages 2; microbatches 4; copies 2;
  flow down: microbatches 0..2 { place stage s -> rank s chunk 0; }
  flow up: microbatches 2..4 { place stage s -> rank 1 - s chunk 1; }
  rank 0 { F(0, mb = 0); F(0, mb = 1); F(1, mb = 2); F(1, mb = 3);
           B(1, mb = 2); B(1, mb = 3); B(0, mb = 0); B(0, mb = 1); }
  rank 1 { F(1, mb = 2); F(1, mb = 3); F(0, mb = 0); F(0, mb = 1);
           B(0, mb = 0); B(0, mb = 1); B(1, mb = 2); B(1, mb = 3); }
})");
    REQUIRE(c->ir);
    REQUIRE_FALSE(c->diags.hasErrors());
    BfPlan plan = bruteForcePlan(*c->ir);
    REQUIRE(plan.ranks[0].groups.size() == 9);
    REQUIRE(plan.ranks[0].groups[1].size() == 1);
    CHECK(plan.ranks[0].groups[1][0].isSend);
    CHECK(plan.ranks[0].groups[1][0].peer == 1);
    CHECK(plan.ranks[0].groups[1][0].message == BfMessage{false, 0, 0});
    REQUIRE(plan.ranks[0].groups[2].size() == 2);
    CHECK(plan.ranks[0].groups[2][0].message == BfMessage{false, 0, 1});
    CHECK_FALSE(plan.ranks[0].groups[2][1].isSend);
    CHECK(plan.ranks[0].groups[2][1].message == BfMessage{false, 0, 2});
    BfVerdict v = bruteForceCheck(plan);
    CHECK_FALSE(v.mismatch);
    CHECK(v.deadlock);
    CHECK(v.stuckAt == std::vector<size_t>{1, 1});
  }
  SECTION("receiving two activations in the other order is a mismatch") {
    BfVerdict v = verdictOf("if r == 0 { F(0, mb = 0); F(0, mb = 1); B(0, mb = 0); B(0, mb = 1); }"
                            "else { F(0, mb = 1); F(0, mb = 0); B(0, mb = 0); B(0, mb = 1); }",
                            2, 2);
    CHECK(v.mismatch);
  }
  SECTION("an overlap pair waits for both inputs") {
    // Rank 1 pairs F(mb 1) with B(mb 0); fine on its own (1F1B's steady state).
    BfVerdict ok = verdictOf("if r == 0 { F(0, mb = 0); F(0, mb = 1); B(0, mb = 0); B(0, mb = 1); }"
                             "else { F(0, mb = 0); F(0, mb = 1) & B(0, mb = 0); B(0, mb = 1); }",
                             2, 2);
    CHECK_FALSE(ok.mismatch);
    CHECK_FALSE(ok.deadlock);
    // Rank 0 pairs F(mb 1) with B(mb 0): B(mb 0) needs rank 1's gradient, which needs
    // F(mb 1)'s activation first on rank 1 -- posted only after the pair.
    BfVerdict stuck = verdictOf("if r == 0 { F(0, mb = 0); F(0, mb = 1) & B(0, mb = 0); B(0, mb = 1); }"
                                "else { F(0, mb = 0); F(0, mb = 1) & B(0, mb = 0); B(0, mb = 1); }",
                                2, 2);
    CHECK_FALSE(stuck.mismatch);
    CHECK(stuck.deadlock);
  }
}

TEST_CASE("message-order and deadlock verdicts agree with a brute-force model", "[property]") {
  const auto start = std::chrono::steady_clock::now();
  ScheduleGenerator gen(0x5eed1234u);
  const int kCases = 4000;

  int frontEndRejected = 0, checksRejected = 0, analysed = 0;
  int clean = 0, deadlocks = 0, mismatches = 0, mismatchAlsoStuck = 0;
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
    bool coverageOrDependency = false, pipecDeadlock = false, pipecMismatch = false;
    for (const Diagnostic &d : compiled->diags.diagnostics()) {
      coverageOrDependency = coverageOrDependency || isCoverageOrDependencyKind(d.kind);
      pipecDeadlock = pipecDeadlock || d.kind == DiagKind::Deadlock;
      pipecMismatch = pipecMismatch || d.kind == DiagKind::MessageOrderMismatch;
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
      if (pipecDeadlock || pipecMismatch || !coverageOrDependency) {
        ++inconsistent;
        if (inconsistent <= kPrintLimit)
          FAIL_CHECK("no CommPlan, yet " << (coverageOrDependency ? "" : "no coverage/dependency error ")
                                         << (pipecDeadlock ? "[Deadlock] " : "")
                                         << (pipecMismatch ? "[MessageOrderMismatch] " : "")
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
    // pipec reports a mismatch instead of simulating, so no Deadlock alongside one.
    bool expectDeadlock = bf.deadlock && !bf.mismatch;
    if (bf.mismatch) {
      ++mismatches;
      if (bf.deadlock)
        ++mismatchAlsoStuck;
    } else if (bf.deadlock) {
      ++deadlocks;
      if (mutations == 0)
        ++unmutatedDeadlocks;
    } else {
      ++clean;
    }

    if (pipecMismatch != bf.mismatch || pipecDeadlock != expectDeadlock) {
      ++disagreements;
      if (disagreements <= kPrintLimit) {
        std::ostringstream why;
        why << "pipec: " << (pipecMismatch ? "MessageOrderMismatch " : "")
            << (pipecDeadlock ? "Deadlock " : "")
            << (!pipecMismatch && !pipecDeadlock ? "clean " : "") << "\nbrute force: "
            << (bf.mismatch ? "mismatch (" + bf.mismatchDetail + ") " : "")
            << (expectDeadlock ? "deadlock\n" + bf.deadlockDetail : "")
            << (!bf.mismatch && !bf.deadlock ? "clean" : "");
        FAIL_CHECK("verdicts disagree\n" << why.str() << "\nschedule:\n"
                                         << source << "pipec says:\n"
                                         << compiled->renderedDiagnostics());
      }
    }

    std::string planDiff = compareWithPlan(*report.comm, bfPlan);
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
          << " deadlock-free, " << deadlocks << " deadlock, " << mismatches
          << " message-order mismatch of which " << mismatchAlsoStuck
          << " would also stall); unmutated: " << unmutatedAnalysed << " analysed, "
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
  REQUIRE(mismatches >= 100);
}
