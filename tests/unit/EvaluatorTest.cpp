// Expression semantics: precedence, floor division, short-circuit, overflow.
#include "TestSupport.h"

#include <catch2/catch.hpp>

using namespace pipec;
using namespace pipec::test;

// Evaluates `expr` through the language itself: it finds the value v in -10..20
// for which `require (expr) == v` holds. nullopt: an evaluation error, or out of range.
static std::optional<int64_t> evaluate(const std::string &expr) {
  for (int64_t guess = -10; guess <= 20; ++guess) {
    std::string source = "schedule t() {\n let v = " + expr + ";\n require v == " +
                         std::to_string(guess) +
                         ";\n ranks 1; stages 1; microbatches 1;\n place stage s -> rank 0;\n"
                         " rank r { F; B; }\n}\n";
    auto c = compile(source);
    if (c->ir)
      return guess;
    if (!c->has(DiagKind::RequireFailed))
      return std::nullopt; // an evaluation error
  }
  return std::nullopt;
}

TEST_CASE("arithmetic follows the usual precedence", "[eval]") {
  CHECK(evaluate("1 + 2 * 3") == 7);
  CHECK(evaluate("(1 + 2) * 3") == 9);
  CHECK(evaluate("10 - 4 - 3") == 3);
  CHECK(evaluate("2 * 3 % 4") == 2);
  CHECK(evaluate("1 < 2 == 1") == 1);
  CHECK(evaluate("1 || 0 && 0") == 1);
  CHECK(evaluate("-2 * -2") == 4);
  CHECK(evaluate("!0 + !5") == 1);
}

TEST_CASE("division and remainder round toward negative infinity", "[eval]") {
  CHECK(evaluate("7 / 2") == 3);
  CHECK(evaluate("-7 / 2") == -4);
  CHECK(evaluate("-7 % 2") == 1);
  CHECK(evaluate("7 % -2") == -1);
  CHECK(evaluate("-1 % 4") == 3);
}

TEST_CASE("ternary, min and max", "[eval]") {
  CHECK(evaluate("1 ? 2 : 3") == 2);
  CHECK(evaluate("0 ? 2 : 0 ? 3 : 4") == 4);
  CHECK(evaluate("min(5, 3, 8)") == 3);
  CHECK(evaluate("max(-3, -7)") == -3);
  CHECK(evaluate("min(4, 7 - 1) + max(1, 2)") == 6);
}

TEST_CASE("short-circuit avoids evaluating the other side", "[eval]") {
  CHECK(evaluate("0 && 1 / 0") == 0);
  CHECK(evaluate("1 || 1 / 0") == 1);
}

TEST_CASE("overflow and division by zero are diagnosed", "[eval]") {
  auto check = [](const std::string &expr, DiagKind kind) {
    auto c = compile("schedule t() {\n let v = " + expr +
                     ";\n require v == 0;\n ranks 1; stages 1; microbatches 1;\n"
                     " place stage s -> rank 0;\n rank r { F; B; }\n}\n");
    CHECK_FALSE(c->ir);
    CHECK(c->has(kind));
  };
  check("1 / 0", DiagKind::DivisionByZero);
  check("5 % (2 - 2)", DiagKind::DivisionByZero);
  check("9223372036854775807 + 1", DiagKind::IntegerOverflow);
  check("-9223372036854775808 - 1", DiagKind::IntegerOverflow);
  check("3037000500 * 3037000500", DiagKind::IntegerOverflow);
  check("-9223372036854775808 / -1", DiagKind::IntegerOverflow);
  check("-(-9223372036854775808)", DiagKind::IntegerOverflow);
}
