// The parser: the AST it builds, and that bad input gives diagnostics, not crashes.
#include "TestSupport.h"

#include <catch2/catch.hpp>

using namespace pipec;
using namespace pipec::test;

TEST_CASE("a full schedule parses into the expected AST", "[parser]") {
  auto c = compile(R"(
schedule demo(P = 4, M = -2) {
  let half = P / 2;
  require P % 2 == 0 : "P must be even";
  ranks P; stages 2 * P; microbatches 8;
  copies 2;
  flow down: microbatches 0..4 { place stage s -> rank s % P chunk s / P; }
  flow up: microbatches 4..8 { place stage s -> rank P - 1 - s % P chunk 1 - s / P; }
  costs { F = 1.5; B[0] = 3; }
  rank 0 { F(0) & B(1, mb = 4); I; W; }
  rank r { if r < half { F; } else if r == half { B(1); } else { } }
})",
                   ElabOptions{{{"M", 8}}, {}});
  REQUIRE(c->ast);
  const ast::Schedule &s = *c->ast;
  CHECK(s.name == "demo");
  REQUIRE(s.params.size() == 2);
  CHECK(s.params[1].defaultValue == -2);
  REQUIRE(s.globals.size() == 2);
  CHECK(s.globals[0].let);
  REQUIRE(s.globals[1].require);
  CHECK(*s.globals[1].require->message == "P must be even");
  CHECK(s.copies);
  REQUIRE(s.flows.size() == 2);
  CHECK(s.flows[1].name == "up");
  REQUIRE(s.costs.size() == 2);
  CHECK(s.costs[0].value == 1.5);
  CHECK(s.costs[1].stage);
  REQUIRE(s.rankPrograms.size() == 2);
  CHECK_FALSE(s.rankPrograms[0].generic);
  CHECK(s.rankPrograms[1].generic);
  const auto &pair = static_cast<const ast::OpStmt &>(*s.rankPrograms[0].body[0]);
  REQUIRE(pair.ops.size() == 2);
  CHECK(pair.ops[1].kind == ast::OpKind::B);
  CHECK(pair.ops[1].mb);
}

TEST_CASE("several syntax errors are reported in one run", "[parser]") {
  auto c = compile("schedule t() {\n ranks 1\n stages 1\n microbatches 1;\n}\n");
  CHECK_FALSE(c->ast);
  CHECK(c->diags.errorCount() == 2);
  CHECK(c->has(DiagKind::ExpectedSemicolon));
}

TEST_CASE("malformed input never crashes the parser", "[parser]") {
  const char *inputs[] = {
      "", "schedule", "schedule t(", "schedule t() {", "}", "schedule t() { rank r { F(; } }",
      "schedule t() { ranks 1 ; stages 1; microbatches 1; place stage s -> rank 0; rank r { F(0,,); } }",
      "\"unterminated", "/* never closed", "schedule t(P = 99999999999999999999) {}",
      "schedule t() { costs { X = 1; } }", "\xff\xfe", "schedule t() { rank r { F & B & I & W; } }",
      "schedule t() { let x = min(1); }", "@#$%"};
  for (const char *input : inputs) {
    auto c = compile(input);
    CHECK(c->diags.hasErrors());
    CHECK_FALSE(c->ir);
  }
}

TEST_CASE("source locations survive non-ASCII text", "[parser]") {
  auto c = compile("// schedule — ünïcode comment\nschedule t() {\n  ranks 1 stages 1;\n}\n");
  REQUIRE(c->diags.hasErrors());
  const Diagnostic &d = c->diags.diagnostics().front();
  auto [line, col] = c->sources.getLineAndColumn(d.range.Start);
  CHECK(line == 3);
  CHECK(col == 10);
}

TEST_CASE("lines end at \\n, \\r\\n or a lone \\r", "[parser]") {
  auto c = compile("schedule t() {\r  ranks 1;\r\n\r\n  ranks 1 stages 1;\n}\n");
  REQUIRE(c->diags.hasErrors());
  SourcePosition pos = c->diags.locate(c->diags.diagnostics().front().range.Start);
  CHECK(pos.line == 4);
  CHECK(pos.column == 10);
  CHECK(pos.lineText == "  ranks 1 stages 1;");
}

TEST_CASE("after the error limit one last error is kept and the rest dropped", "[parser]") {
  auto c = compile("schedule t() { " + std::string(100, '@') + " }");
  const auto &diags = c->diags.diagnostics();
  REQUIRE(diags.size() == DiagnosticEngine::kDefaultErrorLimit + 1);
  CHECK(diags.back().kind == DiagKind::TooManyErrors);
  CHECK(c->diags.stopped());
  CHECK(c->diags.errorCount() > DiagnosticEngine::kDefaultErrorLimit);

  llvm::SourceMgr sources;
  DiagnosticEngine unlimited(sources);
  unlimited.setErrorLimit(0);
  for (int i = 0; i < 100; ++i)
    unlimited.report(DiagKind::SyntaxError, "x");
  CHECK(unlimited.diagnostics().size() == 100);
  CHECK_FALSE(unlimited.stopped());

  DiagnosticEngine three(sources);
  three.setErrorLimit(3);
  for (int i = 0; i < 5; ++i)
    three.report(DiagKind::SyntaxError, "x").note("dropped with its error");
  CHECK(three.reportOnce(DiagKind::SyntaxError, {}, "y") == nullptr);
  CHECK(three.diagnostics().size() == 4);
  CHECK(three.errorCount() == 6);
}

TEST_CASE("control characters are escaped for messages", "[parser]") {
  CHECK(escapeControlCharacters(std::string("a\0b", 3)) == "a\\0b");
  CHECK(escapeControlCharacters("\x01\x1f\x7f\t\n\r") == "\\x01\\x1f\\x7f\\t\\n\\r");
  CHECK(escapeControlCharacters("ünï \\0") == "ünï \\0");
}

// The parser builds the AST a declaration, and a rank program a statement, at a
// time; these pin what that must not change.
TEST_CASE("a rank program built statement by statement spans its whole block", "[parser]") {
  std::string source = "schedule t() { ranks 2; stages 2; microbatches 1; "
                       "place stage s -> rank s;\n rank 0 { F; B; }\n rank r { F; B; } }";
  auto c = compile(source);
  REQUIRE(c->ast);
  REQUIRE(c->ast->rankPrograms.size() == 2);
  const ast::RankProgram &program = c->ast->rankPrograms[0];
  CHECK(std::string(program.range.Start.getPointer(), program.range.End.getPointer()) ==
        "rank 0 { F; B; }");
  CHECK(std::string(program.headRange.Start.getPointer(), program.headRange.End.getPointer()) ==
        "rank 0");
  CHECK(program.body.size() == 2);
  const ast::Schedule &s = *c->ast;
  CHECK(std::string(s.range.Start.getPointer(), s.range.End.getPointer()) == source);
}

TEST_CASE("a rank head that starts with a name but is an expression is explicit", "[parser]") {
  auto c = compile("schedule t(P = 2) { ranks P; stages P; microbatches 1; "
                   "place stage s -> rank s; rank P - 1 { F; B; } rank 0 { F; B; } }");
  REQUIRE(c->ast);
  REQUIRE(c->ast->rankPrograms.size() == 2);
  CHECK_FALSE(c->ast->rankPrograms[0].generic);
  CHECK(c->ast->rankPrograms[0].index);
}

TEST_CASE("a syntax error hides what the AST builder found before it", "[parser]") {
  // The unknown op comes first in the file; the whole-file parse reports only the
  // syntax error, and so must the piecewise one.
  auto c = compile("schedule t() { ranks 1; stages 1; microbatches 1; place stage s -> rank 0; "
                   "rank 0 { X; F; B; }\n rank 1 { F( } }");
  CHECK_FALSE(c->ast);
  CHECK_FALSE(c->has(DiagKind::UnknownOp));
  CHECK(c->diags.errorCount() >= 1);
}

TEST_CASE("the AST builder's findings are reported once", "[parser]") {
  auto c = compile("schedule t() { ranks 1; stages 1; microbatches 1; place stage s -> rank 0; "
                   "rank 0 { X; F; B; } }");
  CHECK_FALSE(c->ast);
  CHECK(c->has(DiagKind::UnknownOp));
  CHECK(c->diags.errorCount() == 1);
}
