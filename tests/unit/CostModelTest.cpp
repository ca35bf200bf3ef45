// The cost model: which setting wins, what --cost and --costs accept, and the
// contradictions and impossible stages checkCosts reports.
#include "cost/CostChecks.h"
#include "cost/CostInput.h"
#include "cost/CostModel.h"

#include "TestSupport.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>

using namespace pipec;
using namespace pipec::test;

namespace {

// A two-stage schedule whose `costs { }` block holds `costs`.
std::unique_ptr<Compiled> withCosts(const std::string &costs) {
  auto compiled = compile("schedule t(P = 2, M = 2) {\n  ranks P; stages P; microbatches M;\n"
                          "  place stage s -> rank s;\n  costs {\n" +
                          costs + "\n  }\n  rank r { F; F; B; B; }\n}\n");
  REQUIRE(compiled->ir);
  return compiled;
}

CostModel build(const std::string &costs, const std::vector<CostOverride> &overrides = {}) {
  auto compiled = withCosts(costs);
  return CostModel::build(*compiled->ir, overrides);
}

CostOverride flag(const std::string &text) {
  std::string error;
  auto cost = parseCostOverride(text, error);
  INFO(error);
  REQUIRE(cost);
  return *cost;
}

// Writes `json` to a fresh temporary file and reads it as --costs.
std::optional<std::vector<CostOverride>> readJson(const std::string &json, std::string &error) {
  llvm::SmallString<128> path;
  REQUIRE_FALSE(llvm::sys::fs::createTemporaryFile("costs", "json", path));
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(path, ec);
    out << json;
  }
  auto costs = readCostsFile(path.str().str(), error);
  llvm::sys::fs::remove(path);
  return costs;
}

// The kinds checkCosts reports for the schedule's `costs` and `overrides`.
std::vector<DiagKind> costDiagnostics(const std::string &costs,
                                      const std::vector<CostOverride> &overrides = {}) {
  auto compiled = withCosts(costs);
  DiagnosticEngine diags(compiled->sources);
  checkCosts(*compiled->ir, overrides, diags);
  std::vector<DiagKind> kinds;
  for (const Diagnostic &d : diags.diagnostics())
    kinds.push_back(d.kind);
  return kinds;
}

} // namespace

TEST_CASE("a per-stage cost beats a whole-schedule one of the same source, in either order",
          "[cost]") {
  for (const char *name : {"activation_bytes", "F", "p2p", "attn_f"}) {
    std::string n = name;
    CostModel first = build(n + "[0] = 5.0; " + n + " = 10.0;");
    CostModel last = build(n + " = 10.0; " + n + "[0] = 5.0;");
    INFO(name);
    if (n == "activation_bytes") {
      CHECK(first.activationBytes(0) == 5);
      CHECK(first.activationBytes(1) == 10);
      CHECK(last.activationBytes(0) == 5);
      CHECK(last.activationBytes(1) == 10);
    } else if (n == "F") {
      CHECK(first.op(OpKind::F, 0) == 5);
      CHECK(last.op(OpKind::F, 0) == 5);
      CHECK(first.op(OpKind::F, 1) == 10);
    } else if (n == "p2p") {
      CHECK(first.transfer(0) == 5);
      CHECK(last.transfer(0) == 5);
      CHECK(last.transfer(1) == 10);
    } else {
      CHECK(first.subOp(0, SubOp::Attention, true) == 5);
      CHECK(last.subOp(0, SubOp::Attention, true) == 5);
      CHECK(last.subOp(1, SubOp::Attention, true) == 10);
    }
  }
  // The same among --cost flags.
  CHECK(build("", {flag("B[0]=4.5"), flag("B=3")}).op(OpKind::B, 0) == 4.5);
  CHECK(build("", {flag("B=3"), flag("B[0]=4.5")}).op(OpKind::B, 0) == 4.5);
  CHECK(build("", {flag("B=3")}).op(OpKind::I, 0) == 2); // I = B - W
  // Among equals, the last one wins.
  CHECK(build("", {flag("B=3"), flag("B=5")}).op(OpKind::B, 1) == 5);
}

TEST_CASE("a later source beats an earlier one, per-stage or not", "[cost]") {
  // --cost over the schedule's per-stage value.
  CHECK(build("F[0] = 5.0;", {flag("F=2")}).op(OpKind::F, 0) == 2);
  // --cost over --costs, even a whole-schedule flag over a per-stage file value.
  CostOverride file{"F", 0, 7, CostSource::File};
  CHECK(build("", {file, flag("F=2")}).op(OpKind::F, 0) == 2);
  // Precedence follows the source, not the order given.
  CHECK(build("", {flag("F=2"), file}).op(OpKind::F, 0) == 2);
  CHECK(build("F = 3.0;", {file}).op(OpKind::F, 0) == 7);
  CHECK(build("F = 3.0;", {file}).op(OpKind::F, 1) == 3);
}

TEST_CASE("a --cost flag refuses non-finite, negative and malformed values, and reads -0 as 0", "[cost]") {
  std::string error;
  for (const char *text : {"F=inf", "F=-inf", "F=nan", "F=1e309"}) {
    INFO(text);
    CHECK_FALSE(parseCostOverride(text, error));
    CHECK(error.find("is not a finite number") != std::string::npos);
  }
  CHECK_FALSE(parseCostOverride("B[0]=INF", error));
  CHECK_FALSE(parseCostOverride("Q=1", error));
  CHECK_FALSE(parseCostOverride("F=-2", error));
  CHECK_FALSE(parseCostOverride("F[x]=1", error));
  CHECK_FALSE(parseCostOverride("F=abc", error));
  CostOverride zero = flag("F=-0.0");
  CHECK(zero.value == 0);
  CHECK_FALSE(std::signbit(zero.value));
  CHECK(flag("F=1.7976931348623157e308").value == 1.7976931348623157e308);
}

TEST_CASE("a --costs file keeps each JSON number exactly", "[cost]") {
  std::string error;
  auto costs = readJson(R"({"F": 4e-7, "B": 0.1, "W": 1e-300, "I[1]": 123456789.123456789,
                            "activation_bytes": 1.7976931348623157e308, "FB": -0.0})",
                        error);
  INFO(error);
  REQUIRE(costs);
  std::map<std::string, double> byName;
  for (const CostOverride &c : *costs) {
    CHECK(c.source == CostSource::File);
    byName[c.name] = c.value;
  }
  CHECK(byName["F"] == 4e-7);
  CHECK(byName["B"] == 0.1);
  CHECK(byName["W"] == 1e-300);
  CHECK(byName["I"] == 123456789.123456789);
  CHECK(byName["activation_bytes"] == 1.7976931348623157e308);
  CHECK(byName["FB"] == 0);
  CHECK_FALSE(std::signbit(byName["FB"]));
  CHECK(build("", *costs).op(OpKind::F, 0) == 4e-7);
}

TEST_CASE("a --costs file refuses non-finite and negative numbers, naming the key", "[cost]") {
  std::string error;
  CHECK_FALSE(readJson(R"({"F": 1e400})", error));
  CHECK(error.find("the value of \"F\" is not a finite number") != std::string::npos);
  CHECK_FALSE(readJson(R"({"B[1]": -1})", error));
  CHECK(error.find("the value of \"B[1]\" is below 0") != std::string::npos);
}

TEST_CASE("a --cost or --costs stage out of range is an error", "[cost]") {
  std::string error;
  auto file = readJson(R"({"B[99]": 1})", error);
  REQUIRE(file);
  CHECK(costDiagnostics("", *file) == std::vector<DiagKind>{DiagKind::CostStageOutOfRange});
  CHECK(costDiagnostics("", {flag("F[4]=2")}) ==
        std::vector<DiagKind>{DiagKind::CostStageOutOfRange});
  CHECK(costDiagnostics("", {flag("F[1]=2")}).empty());
}

TEST_CASE("contradicting costs are reported, once per contradiction", "[cost]") {
  CHECK(costDiagnostics("").empty());
  CHECK(costDiagnostics("F = 10.0; B = 20.0; W = 5.0;") ==
        std::vector<DiagKind>{}); // I = B - W by default
  // The brief's example: forward sub-operation costs only.
  CHECK(costDiagnostics("F = 4.0; B = 20.0; W = 10.0; attn_f = 1.0; dispatch_f = 1.0; "
                        "mlp_f = 1.0; combine_f = 1.0;") ==
        std::vector<DiagKind>{DiagKind::SubOpCostsOneDirection});
  CHECK(costDiagnostics("F = 10.0; attn_f = 1.0; attn_b = 5.0;") ==
        std::vector<DiagKind>{DiagKind::SubOpSumMismatch, DiagKind::SubOpSumMismatch});
  CHECK(costDiagnostics("FB = 1.0;") == std::vector<DiagKind>{DiagKind::PairCostOutOfRange});
  CHECK(costDiagnostics("FB = 4.0;") == std::vector<DiagKind>{DiagKind::PairCostOutOfRange});
  CHECK(costDiagnostics("FB = 2.5;").empty());
  CHECK(costDiagnostics("I = 1.5; W = 1.0; B = 2.0;") ==
        std::vector<DiagKind>{DiagKind::SplitBackwardMismatch});
  CHECK(costDiagnostics("W = 3.0;") == std::vector<DiagKind>{DiagKind::SplitBackwardMismatch});
  // Sub-operations that sum to F and B but plan a pair other than FB.
  CHECK(costDiagnostics("F = 2.0; B = 2.0; FB = 2.0; attn_f = 1.0; mlp_f = 1.0; attn_b = 1.0; "
                        "mlp_b = 1.0;") == std::vector<DiagKind>{DiagKind::PairCostMismatch});
  // From the command line too, with nothing to point at in the file.
  CHECK(costDiagnostics("", {flag("FB=9")}) ==
        std::vector<DiagKind>{DiagKind::PairCostOutOfRange});
}

// A recomputation (R) replays a forward: by default it costs its stage's F,
// whatever F is, and the `R` cost (block or flag, per stage) overrides it.
TEST_CASE("R costs its stage's forward unless the R cost is given", "[cost]") {
  CostModel plain = build("F = 1.5;");
  CHECK(plain.op(OpKind::R, 0) == 1.5);
  CHECK(plain.op(OpKind::R, 1) == 1.5);
  CostModel perStage = build("F[1] = 3; R[0] = 0.25;");
  CHECK(perStage.op(OpKind::R, 0) == 0.25);
  CHECK(perStage.op(OpKind::R, 1) == 3);
  CostModel flagged = build("F = 1;", {flag("R=2")});
  CHECK(flagged.op(OpKind::R, 0) == 2);
  CHECK(flagged.op(OpKind::F, 0) == 1);
}
