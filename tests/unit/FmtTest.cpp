// `pipec fmt`: the layout rules on small inputs, and the properties that make it
// safe to run on save: formatting is idempotent and never changes a schedule's
// tokens or ops, on the library, on generated schedules and on generated
// schedules whose layout was scrambled first. Deterministic: fixed seeds.
#include "ScheduleGenerator.h"
#include "TestSupport.h"

#include "formatter/FmtTokens.h"
#include "formatter/Formatter.h"
#include "formatter/CanonicalLayout.h"
#include "formatter/UnifiedDiff.h"

#include <catch2/catch.hpp>

#include <random>

using namespace pipec;
using namespace pipec::test;

namespace {

std::string layout(const std::string &source) {
  std::vector<formatter::Token> tokens;
  std::string error;
  REQUIRE(formatter::lexForFormat(source, tokens, error));
  return formatter::layoutTokens(tokens);
}

// Formats through the whole safety net; fails the test if it refuses.
std::string format(const std::string &source) {
  formatter::FormatResult result = formatter::formatSource("test.pipe", source);
  INFO(source);
  INFO(result.problem);
  REQUIRE(result.status == formatter::FormatResult::Formatted);
  return result.text;
}

// The same tokens with random whitespace between them: spaces, tabs, line
// breaks, blank lines (a line comment still ends its line).
std::string scramble(const std::string &source, std::mt19937 &rng) {
  std::vector<formatter::Token> tokens;
  std::string error;
  REQUIRE(formatter::lexForFormat(source, tokens, error));
  static const char *const gaps[] = {" ", "  ", "\n", "\t", " \n  ", "\n\n\n", "\r\n"};
  std::string out;
  for (const formatter::Token &token : tokens) {
    if (!out.empty())
      out += gaps[rng() % (sizeof gaps / sizeof *gaps)];
    out += token.text;
    if (token.kind == formatter::TokenKind::LineComment)
      out += "\n";
  }
  return out;
}

// The same tokens with a comment between every two: the parser must not see them.
std::string commented(const std::string &source) {
  std::vector<formatter::Token> tokens;
  std::string error;
  REQUIRE(formatter::lexForFormat(source, tokens, error));
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    out += tokens[i].text;
    out += i % 3 ? " /* c */ " : " // c\n";
    if (tokens[i].kind == formatter::TokenKind::LineComment)
      out += "\n";
  }
  return out;
}

void checkProperties(const std::string &source) {
  std::string once = format(source);
  INFO(once);
  CHECK(format(once) == once);
  std::unique_ptr<Compiled> before = compile(source), after = compile(once);
  REQUIRE((before->ir != nullptr) == (after->ir != nullptr));
  if (before->ir)
    CHECK(before->ir_text() == after->ir_text());
}

} // namespace

TEST_CASE("fmt: spacing around operators, ranges, calls and unary minus", "[fmt]") {
  CHECK(layout("schedule s(P=4,M=-1){ranks P*2;let a=min( P ,-M )..!x;}") ==
        "schedule s(P = 4, M = -1) { ranks P * 2; let a = min(P, -M)..!x; }\n");
  CHECK(layout("schedule s(){flow f : microbatches 0 .. M-1 {place stage s->rank s chunk 0;}}") ==
        "schedule s() { flow f: microbatches 0..M - 1 { place stage s -> rank s chunk 0; } }\n");
  CHECK(layout("schedule s(){rank r{F(0,mb=i)&B;x=a?b:c;}}") ==
        "schedule s() { rank r { F(0, mb = i) & B; x = a ? b : c; } }\n");
}

TEST_CASE("fmt: blocks stay on one line only as written and when they fit", "[fmt]") {
  std::string source = "schedule s() {\n  rank r {\n    for i in 0..n { F; B; }\n"
                       "    for i in 0..n {\n      F;\n    }\n  }\n}\n";
  CHECK(layout(source) == source);
  // Expanded: the author broke it.
  CHECK(layout("schedule s() {\nrank r {\nfor i in 0..n { F;\nB; }\n}\n}\n") ==
        "schedule s() {\n  rank r {\n    for i in 0..n {\n      F;\n      B;\n    }\n  }\n}\n");
  // Expanded: too long for one line.
  std::string ops;
  for (int i = 0; i < 30; ++i)
    ops += "F; ";
  std::string formatted = layout("schedule s() {\nrank r {\nfor i in 0..n { " + ops + "}\n}\n}\n");
  CHECK(formatted.find("for i in 0..n {\n      F;\n") != std::string::npos);
  // `} else {`, whatever the author's lines.
  CHECK(layout("schedule s() {\nrank r {\nif a {\nF;\n}\nelse\n{\nB;\n}\n}\n}\n") ==
        "schedule s() {\n  rank r {\n    if a {\n      F;\n    } else {\n      B;\n    }\n  }\n}\n");
  CHECK(layout("schedule s() {\nrank r {\nif a { F; } else if b { B; } else { W; }\n}\n}\n") ==
        "schedule s() {\n  rank r {\n    if a { F; } else if b { B; } else { W; }\n  }\n}\n");
}

TEST_CASE("fmt: comments and blank lines are kept", "[fmt]") {
  std::string source = "// head\n\nschedule s() {\n  ranks 1;    // aligned\n\n\n\n"
                       "  /* block\n     comment */\n  stages 1; /* inline */ microbatches 1;\n}\n";
  CHECK(layout(source) == "// head\n\nschedule s() {\n  ranks 1;    // aligned\n\n"
                          "  /* block\n     comment */\n  stages 1; /* inline */\n  microbatches 1;\n}\n");
  // No blank line after `{` or before `}`; a line break inside a statement is a
  // continuation line.
  CHECK(layout("schedule s() {\n\n  require P > 0 :\n \"m\";\n\n}") ==
        "schedule s() {\n  require P > 0 :\n      \"m\";\n}\n");
}

TEST_CASE("fmt: a domain declaration needs no rule of its own", "[fmt]") {
  CHECK(layout("schedule s(P = 4, v = 2) {\ndomain P in 2..17;\ndomain M in P .. 8*P+1;\n"
               "domain v in { 1,2 , 4 };\n}\n") ==
        "schedule s(P = 4, v = 2) {\n  domain P in 2..17;\n  domain M in P..8 * P + 1;\n"
        "  domain v in {1, 2, 4};\n}\n");
}

TEST_CASE("fmt: files with syntax errors are not formatted", "[fmt]") {
  formatter::FormatResult result = formatter::formatSource("bad.pipe", "schedule s( { ranks 1 }");
  CHECK(result.status == formatter::FormatResult::Rejected);
  CHECK(result.compilation->diags().hasErrors());
  // Errors of meaning found while parsing (no `ranks`, a negative cost) do not
  // stop formatting.
  CHECK(format("schedule s(){costs{F=-1;}}") == "schedule s() { costs { F = -1; } }\n");
}

TEST_CASE("fmt: the library is formatted", "[fmt]") {
  for (const char *name : {"1f1b", "chimera", "dualpipe", "dualpipev", "gpipe",
                           "interleaved_1f1b", "zb_h1", "zb_h2", "zbv"}) {
    INFO(name);
    std::string source = readExample(name);
    CHECK(format(source) == source);
    checkProperties(source);
    std::mt19937 rng(7);
    checkProperties(scramble(source, rng));
    // Comments are on the lexer's hidden channel: the parser never sees them.
    std::unique_ptr<Compiled> plain = compile(source), withComments = compile(commented(source));
    REQUIRE(withComments->ir);
    CHECK(withComments->ir_text() == plain->ir_text());
    checkProperties(commented(source));
  }
}

TEST_CASE("fmt: idempotent and meaning-preserving on generated schedules", "[fmt]") {
  ScheduleGenerator generator(20261201);
  std::mt19937 rng(5);
  for (int i = 0; i < 40; ++i) {
    GenSchedule schedule = generator.valid();
    if (i % 2)
      generator.mutate(schedule);
    INFO(schedule.history);
    std::string source = schedule.source();
    checkProperties(source);
    checkProperties(scramble(source, rng));
  }
}

TEST_CASE("fmt: unified diff", "[fmt]") {
  CHECK(formatter::unifiedDiff("a\nb\n", "a\nb\n", "f") == "");
  CHECK(formatter::unifiedDiff("a\nb\nc\n", "a\nB\nc\n", "f") ==
        "--- f\n+++ f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
  CHECK(formatter::unifiedDiff("a", "a\n", "f") ==
        "--- f\n+++ f\n@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+a\n");
}
