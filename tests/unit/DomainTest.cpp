// Parameter domains: the points a schedule family is checked at, their order,
// dependent bounds, -D overrides, the cap, and a check that does not depend on
// the number of threads.
#include "TestSupport.h"

#include "frontend/DomainCheck.h"

#include <catch2/catch.hpp>

using namespace pipec;
using namespace pipec::test;

namespace {

const char *kFamily = R"(
schedule family(P = 2, M = 4, v = 1) {
  domain P in 1..4;
  domain M in P..2*P;
  ranks P; stages P; microbatches M;
  place stage s -> rank s;
  rank r {
    for i in 0..M * v { F; }
    for i in 0..M * v { B; }
  }
})";

ParamDefine define(const std::string &text) {
  ParamDefine parsed;
  REQUIRE(parseParamDefine(text, parsed).empty());
  return parsed;
}

const ParameterDomain *domainOf(Compiled &c, std::vector<ParamDefine> defines = {},
                                uint64_t maxPoints = kDefaultMaxPoints) {
  Compilation &compilation = *c.compilation;
  bool built = compilation.buildDomain(defines, maxPoints);
  CHECK(built == (compilation.domain() != nullptr));
  return compilation.domain();
}

std::vector<std::string> described(const ParameterDomain &domain) {
  std::vector<std::string> points;
  for (size_t i = 0; i < domain.points.size(); ++i)
    points.push_back(domain.describe(i));
  return points;
}

} // namespace

TEST_CASE("points enumerate the product in declaration order, bounds per point", "[domain]") {
  auto c = compile(kFamily);
  auto domain = domainOf(*c);
  REQUIRE(domain);
  CHECK(domain->description() == "P in 1..4, M in P..2*P");
  CHECK(described(*domain) == std::vector<std::string>{"P=1, M=1", "P=2, M=2", "P=2, M=3",
                                                       "P=3, M=3", "P=3, M=4", "P=3, M=5"});
}

TEST_CASE("a -D overrides its domain in place; others follow in parameter order", "[domain]") {
  auto c = compile(kFamily);
  auto domain = domainOf(*c, {define("v=3,1"), define("P=2")});
  REQUIRE(domain);
  CHECK(domain->description() == "P=2, M in P..2*P, v in {3,1}");
  CHECK(described(*domain) == std::vector<std::string>{"P=2, M=2, v=1", "P=2, M=2, v=3",
                                                       "P=2, M=3, v=1", "P=2, M=3, v=3"});
  ElabOptions options = domain->optionsAt(3, {});
  CHECK(options.defines == ParamValues{{"P", 2}, {"M", 3}, {"v", 3}});
}

TEST_CASE("a -D range is parsed and may use other parameters", "[domain]") {
  auto c = compile(kFamily);
  auto domain = domainOf(*c, {define("M=P+1..P+3")});
  REQUIRE(domain);
  CHECK(domain->points.size() == 6);
  CHECK(domain->describe(0) == "P=1, M=2");
}

TEST_CASE("the cap counts without enumerating and names the number", "[domain]") {
  auto c = compile(kFamily);
  CHECK_FALSE(domainOf(*c, {define("P=1..1000000000")}, 1000));
  CHECK(c->has(DiagKind::TooManyPoints));
}

TEST_CASE("no domain and no -D: one point, the defaults", "[domain]") {
  auto c = compile(withBody("for i in 0..M { F; } for i in 0..M { B; }"));
  auto domain = domainOf(*c);
  REQUIRE(domain);
  REQUIRE(domain->points.size() == 1);
  CHECK(domain->optionsAt(0, {}).defines.empty());
}

TEST_CASE("the text of a -D parses into one value, a list or a range", "[domain]") {
  ParamDefine d;
  CHECK(parseParamDefine("P=4", d).empty());
  CHECK((d.single() && d.values == std::vector<int64_t>{4}));
  CHECK(parseParamDefine("P=8,2,2", d).empty());
  CHECK(d.values == std::vector<int64_t>{2, 8});
  CHECK(parseParamDefine("M=P..4*P+1", d).empty());
  CHECK((d.range == "P..4*P+1" && d.values.empty()));
  CHECK_FALSE(parseParamDefine("P=", d).empty());
  CHECK_FALSE(parseParamDefine("2P=1", d).empty());
  CHECK_FALSE(parseParamDefine("P=1,x", d).empty());
}

TEST_CASE("the domain check reports the same whatever the number of threads", "[domain]") {
  const char *source = R"(
schedule odd(P = 2, M = 4) {
  require M != 5;
  domain P in 1..5;
  domain M in P..3*P;
  ranks P; stages P; microbatches M;
  place stage s -> rank s;
  rank r {
    let warmup = P == 3 && r == 0 ? 0 : P - r - 1;
    for i in 0..warmup { F; }
    for i in 0..M - warmup { F; B; }
    for i in 0..warmup { B; }
  }
})";
  std::string first;
  for (unsigned jobs : {1u, 2u, 5u}) {
    auto c = compile(source);
    auto domain = domainOf(*c);
    REQUIRE(domain);
    PointSummary summary =
        checkDomain(*c->compilation, *domain, {}, {}, DomainCheckOptions{jobs, false, 20});
    CHECK(summary.failingPoint == "P=3, M=3");
    CHECK(summary.failed == 5); // P=3, M in 3..8 but 5: rank 0 skips its warm-up
    CHECK(summary.unsupported == 3);
    std::string report = c->renderedDiagnostics();
    if (first.empty())
      first = report;
    CHECK(report == first);
  }
}
