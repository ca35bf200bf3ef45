// The option parser the emitted programs share: defaults from the table, ranges,
// the --timeout clamp, errors with exit status 2, and --help from the table.
#include "exec/RunOptions.h"

#include "pipert/OptionTable.h"
#include "pipert/SharedOptions.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace pipert;

namespace {

struct Args {
  explicit Args(std::vector<std::string> args) : strings(std::move(args)) {
    strings.insert(strings.begin(), "program");
    for (std::string &s : strings)
      pointers.push_back(s.data());
  }
  int argc() { return int(pointers.size()); }
  char **argv() { return pointers.data(); }
  std::vector<std::string> strings;
  std::vector<char *> pointers;
};

const std::vector<OptionSpec> kTable = {
    {"count", OptionKind::Integer, "N", "3", 1, 10, "how many"},
    {"wait", OptionKind::Number, "SECONDS", "2.5", 0, 100, "how long"},
    {"color", OptionKind::Choice, "red|green|blue", "red", 0, 0, "which"},
    {"out", OptionKind::Text, "FILE", nullptr, 0, 0, "where"},
    {"loud", OptionKind::Flag, "", nullptr, 0, 0, "shout"},
};

int parseStatus(const OptionParser &parser, std::vector<std::string> args, OptionValues &values) {
  Args a(std::move(args));
  int status = -1;
  return parser.parse(a.argc(), a.argv(), values, status) ? -1 : status;
}

} // namespace

TEST_CASE("options not given take the table's defaults", "[runtime][options]") {
  OptionParser parser(kTable);
  OptionValues v;
  REQUIRE(parseStatus(parser, {}, v) == -1);
  CHECK(v.integer("count") == 3);
  CHECK(v.number("wait") == 2.5);
  CHECK(v.text("color") == "red");
  CHECK(v.text("out").empty());
  CHECK_FALSE(v.flag("loud"));
  CHECK_FALSE(v.given("count"));
  REQUIRE(parseStatus(parser, {"--count", "10", "--color", "blue", "--loud", "--out", "x"}, v) == -1);
  CHECK(v.integer("count") == 10);
  CHECK(v.text("color") == "blue");
  CHECK(v.flag("loud"));
  CHECK(v.given("count"));
  CHECK(v.text("out") == "x");
}

TEST_CASE("bad values and unknown options are usage errors (status 2)", "[runtime][options]") {
  OptionParser parser(kTable);
  OptionValues v;
  for (std::vector<std::string> bad : std::vector<std::vector<std::string>>{
           {"--count", "0"}, {"--count", "11"}, {"--count", "3x"}, {"--count", ""},
           {"--count", "99999999999999999999999"}, {"--count"}, {"--wait", "0"},
           {"--wait", "-1"}, {"--wait", "nan"}, {"--wait", "1s"}, {"--color", "pink"},
           {"--out", ""}, {"--bogus"}, {"count", "3"}})
    CHECK(parseStatus(parser, bad, v) == 2);
}

TEST_CASE("a number above the table's maximum is clamped to it", "[runtime][options]") {
  OptionParser parser(kTable);
  OptionValues v;
  for (const char *big : {"100", "1e10", "inf", "1e400"}) {
    REQUIRE(parseStatus(parser, {"--wait", big}, v) == -1);
    CHECK(v.number("wait") == 100);
  }
}

TEST_CASE("--help is generated from the table", "[runtime][options]") {
  OptionParser parser(kTable, "exit status: 0 ok\n");
  OptionValues v;
  CHECK(parseStatus(parser, {"--help"}, v) == 0);
  std::string help = parser.help();
  CHECK_THAT(help, Catch::Contains("--count N"));
  CHECK_THAT(help, Catch::Contains("how many (1 to 10; default 3)"));
  CHECK_THAT(help, Catch::Contains("--color red|green|blue"));
  CHECK_THAT(help, Catch::Contains("at most 100"));
  CHECK_THAT(help, Catch::EndsWith("exit status: 0 ok\n"));
}

TEST_CASE("a table with a bad default is refused when it is built", "[runtime][options]") {
  CHECK_THROWS(OptionParser({{"n", OptionKind::Integer, "N", "0", 1, 2, "n"}}));
}

TEST_CASE("the CPU program's options: shared defaults and the timeout clamp", "[runtime][options]") {
  RunOptions o;
  int status = -1;
  Args none({});
  REQUIRE(parseRunOptions(none.argc(), none.argv(), o, status));
  // The CUDA program reads the same rows (sharedProgramOptions).
  RunOptions fresh;
  CHECK(o.hidden == fresh.hidden);
  CHECK(o.seq == fresh.seq);
  CHECK(o.timeoutSeconds == fresh.timeoutSeconds);
  CHECK(o.steps == fresh.steps);
  CHECK(o.seed == fresh.seed);
  Args huge({"--timeout", "1e10"});
  REQUIRE(parseRunOptions(huge.argc(), huge.argv(), o, status));
  CHECK(o.timeoutSeconds == kMaxTimeoutSeconds);
  Args ep({"--ep", "3"});
  CHECK_FALSE(parseRunOptions(ep.argc(), ep.argv(), o, status));
  CHECK(status == 2);
  Args trace({"--trace", ""});
  CHECK_FALSE(parseRunOptions(trace.argc(), trace.argv(), o, status));
  CHECK(status == 2);
}
