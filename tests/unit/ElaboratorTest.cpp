// Elaboration: parameters, implicit micro-batches, W first-in-first-out, flows,
// limits.
#include "TestSupport.h"

#include <catch2/catch.hpp>

using namespace pipec;
using namespace pipec::test;

TEST_CASE("parameter overrides replace defaults; unknown names are errors", "[elab]") {
  std::string src = withBody("for i in 0..M { F; } for i in 0..M { B; }");
  auto c = compile(src, ElabOptions{{{"M", 3}}, {}});
  REQUIRE(c->ir);
  CHECK(c->ir->numMicrobatches == 3);
  auto bad = compile(src, ElabOptions{{{"Q", 3}}, {}});
  CHECK(bad->has(DiagKind::UnknownParameter));
}

TEST_CASE("implicit micro-batches ascend and skip explicit ones", "[elab]") {
  auto c = compile(withBody("F(mb = 2); F; F; F; B; B(0, mb = 3); B; B;", 1, 4));
  REQUIRE(c->ir);
  CHECK(c->ir_text() == "rank 0: F0.2 F0.0 F0.1 F0.3 B0.0 B0.3 B0.1 B0.2\n");
}

TEST_CASE("bare W completes the oldest deferred I across chunks", "[elab]") {
  auto c = compile(R"(
schedule v(P = 1, M = 2) {
  ranks 1; stages 2; microbatches M;
  place stage s -> rank 0 chunk s;
  rank r { F(0); F(0); F(1); F(1); I(1); I(1); I(0); W; W(0); W; I(0); W(mb = 1); }
})");
  REQUIRE(c->ir);
  CHECK(c->ir_text() ==
        "rank 0: F0.0 F0.1 F1.0 F1.1 I1.0 I1.1 I0.0 W1.0 W0.0 W1.1 I0.1 W0.1\n");
}

TEST_CASE("flows number micro-batches within the flow", "[elab]") {
  auto c = compile(R"(
schedule d(P = 2, M = 4) {
  ranks P; stages P; microbatches M;
  flow down: microbatches 0..M/2 { place stage s -> rank s chunk 0; }
  flow up: microbatches M/2..M { place stage s -> rank P - 1 - s chunk 1; }
  rank r { F(0); F(1); F(1); F(0); }
})");
  REQUIRE(c->ir);
  const ScheduleIR &ir = *c->ir;
  CHECK(c->ir_text() == "rank 0: F0.0 F1.0 F1.1 F0.1\nrank 1: F0.0 F1.0 F1.1 F0.1\n");
  const Op &upOnRank0 = ir.ranks[0].ops[1];
  CHECK(upOnRank0.stage == 1);
  CHECK(upOnRank0.microbatch == 2);
  CHECK(ir.flows[upOnRank0.flow].name == "up");
}

TEST_CASE("overlap pairs are stored forward first", "[elab]") {
  auto c = compile(withBody("F; B & F; B;", 1, 2));
  REQUIRE(c->ir);
  const auto &ops = c->ir->ranks[0].ops;
  REQUIRE(ops.size() == 4);
  CHECK(ops[1].kind == ast::OpKind::F);
  CHECK(ops[1].pair == PairRole::First);
  CHECK(ops[2].kind == ast::OpKind::B);
  CHECK(ops[2].pair == PairRole::Second);
  CHECK(c->ir_text() == "rank 0: F0.0 FB(F0.1|B0.0) B0.1\n");
}

TEST_CASE("ops remember their loop iteration", "[elab]") {
  auto c = compile(withBody("for i in 0..2 { for j in 0..2 { F; } } for k in 0..4 { B; }", 1, 4));
  REQUIRE(c->ir);
  const ScheduleIR &ir = *c->ir;
  CHECK(ir.describeIteration(ir.ranks[0].ops[3].iteration) == "i = 1, j = 1");
  CHECK(ir.describeIteration(ir.ranks[0].ops[6].iteration) == "k = 2");
}

TEST_CASE("released iteration records describe no iteration", "[elab]") {
  auto c = compile(withBody("for i in 0..2 { for j in 0..2 { F; } }", 1, 4));
  REQUIRE(c->ir);
  ScheduleIR ir = *c->ir;
  uint32_t iteration = ir.ranks[0].ops[3].iteration;
  REQUIRE(ir.describeIteration(iteration) == "i = 1, j = 1");
  ir.releaseIterations();
  CHECK(ir.iterations.size() == 1);
  CHECK(ir.describeIteration(iteration).empty());
  CHECK(ir.originOf(ir.ranks[0].ops[3]).kind == OpKind::F);
}

TEST_CASE("limits stop runaway schedules quickly", "[elab]") {
  ElabOptions small;
  small.limits.maxOps = 100;
  small.limits.maxIterations = 1000;
  auto manyOps = compile(withBody("for i in 0..60 { F; } for i in 0..60 { B; }", 1, 60), small);
  CHECK(manyOps->has(DiagKind::OpLimitExceeded));
  auto spin = compile(withBody("for i in 0..1000000000000 { }", 1, 1), small);
  CHECK(spin->has(DiagKind::IterationLimitExceeded));
  auto nested = compile(withBody("for i in 0..100 { for j in 0..100 { } }", 1, 1), small);
  CHECK(nested->has(DiagKind::IterationLimitExceeded));
  auto huge = compile("schedule t() { ranks 1; stages 1000000; microbatches 1000000000;\n"
                      " place stage s -> rank 0; rank r { } }");
  CHECK(huge->has(DiagKind::OpLimitExceeded));
}

TEST_CASE("errors repeated across ranks are reported once", "[elab]") {
  auto c = compile(withBody("F(7);", 4, 4));
  CHECK(c->has(DiagKind::EmptyChunk));
  REQUIRE(c->diags.errorCount() == 1);
  CHECK(c->diags.diagnostics().front().repeats == 3);
}

TEST_CASE("a rank's chunks may be sparse and high", "[elab]") {
  // Stage s on rank s, chunk P - 1: each rank holds only its one (high) chunk.
  auto c = compile(R"(
schedule h(P = 3, M = 2) {
  ranks P; stages P; microbatches M;
  place stage s -> rank s chunk P - 1;
  rank r { F(2); F(2); I(2); I(2); W(2); W(mb = 1); }
})");
  REQUIRE(c->ir);
  CHECK(c->ir_text() == "rank 0: F2.0 F2.1 I2.0 I2.1 W2.0 W2.1\n"
                        "rank 1: F2.0 F2.1 I2.0 I2.1 W2.0 W2.1\n"
                        "rank 2: F2.0 F2.1 I2.0 I2.1 W2.0 W2.1\n");
  CHECK(c->ir->ranks[1].ops[0].stage == 1);
  auto empty = compile(R"(
schedule h(P = 3, M = 2) {
  ranks P; stages P; microbatches M;
  place stage s -> rank s chunk P - 1;
  rank r { F(1); }
})");
  CHECK(empty->has(DiagKind::EmptyChunk));
  CHECK(empty->renderedDiagnostics().find("rank 0 holds chunk 2") != std::string::npos);
}

TEST_CASE("stages placed out of order still fill each rank's chunks", "[elab]") {
  auto c = compile(R"(
schedule v(P = 2, M = 2) {
  ranks P; stages 2 * P; microbatches M;
  place stage s -> rank (s + 1) % P chunk 3 - s;
  rank r { F(3 - (P - 1 + r) % P); F(3 - (P - 1 + r) % P); }
})");
  REQUIRE(c->ir);
  CHECK(c->ir->ranks[0].ops[0].stage == 1);
  CHECK(c->ir->ranks[1].ops[0].stage == 0);
}

TEST_CASE("a stage placed twice on one slot is a conflict", "[elab]") {
  auto c = compile(R"(
schedule t(P = 4, M = 2) {
  ranks P; stages P; microbatches M;
  place stage s -> rank s / 2;
  rank r { F; }
})");
  CHECK(c->has(DiagKind::SlotConflict));
}
