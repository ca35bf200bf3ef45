// The executor on hand-written program tables, with stream programs lowered as
// the compiler lowers them (TestStreams.h): a 2-rank 1F1B (messages in both
// directions) and a one-rank V whose overlap pair interleaves its parts on the
// compute and expert streams. Loss and
// every gradient must match the single-device reference; the measured peak
// activations must match the prediction written in the table.
#include "TestPrograms.h"

#include "pipert/Program.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace pipert;

using test::kOneFOneB;
using test::kV;

namespace {
int runWith(const Program &program, std::vector<std::string> args) {
  return test::runTestProgram(program, std::move(args));
}
} // namespace

TEST_CASE("a two-rank program matches the reference in fp64 and fp32", "[runtime][program]") {
  CHECK(runWith(kOneFOneB, {"--check", "--dtype", "fp64"}) == 0);
  CHECK(runWith(kOneFOneB, {"--check", "--dtype", "fp32", "--steps", "2"}) == 0);
  CHECK(runWith(kOneFOneB, {"--check", "--dtype", "fp64", "--model", "moe"}) == 0);
}

TEST_CASE("an overlap pair of two chunks interleaves its parts and stays exact", "[runtime][program]") {
  CHECK(runWith(kV, {"--check", "--dtype", "fp64"}) == 0);
  CHECK(runWith(kV, {"--check", "--dtype", "fp64", "--model", "moe", "--hidden", "8"}) == 0);
  // Every stream on its own thread: the pair's halves really run at once.
  CHECK(runWith(kV, {"--check", "--dtype", "fp64", "--model", "moe", "--stream-threads"}) == 0);
  CHECK(runWith(kOneFOneB, {"--check", "--dtype", "fp64", "--stream-threads", "--steps", "2"}) == 0);
}

TEST_CASE("a wrong peak prediction fails the run", "[runtime][program]") {
  const int64_t wrongPeaks[] = {1};
  Program wrong = kV;
  wrong.predictedPeakActivations = wrongPeaks;
  CHECK(runWith(wrong, {"--dtype", "fp64"}) == 1);
}

TEST_CASE("empty ops time the runtime alone", "[runtime][program]") {
  CHECK(runWith(kOneFOneB, {"--model", "empty", "--steps", "3"}) == 0);
  CHECK(runWith(kOneFOneB, {"--model", "empty", "--check"}) == 2);
}

TEST_CASE("bad options are usage errors", "[runtime][program]") {
  CHECK(runWith(kV, {"--model", "cnn"}) == 2);
  CHECK(runWith(kV, {"--steps", "0"}) == 2);
  CHECK(runWith(kV, {"--bogus"}) == 2);
  CHECK(runWith(kV, {"--hidden"}) == 2);
}

namespace {

// runWith, with the program's stdout captured: the "step N: loss X (HEX)" lines.
std::vector<std::string> lossLines(const Program &program, std::vector<std::string> args) {
  int status = 0;
  std::string out = test::outputOf(1, [&] { return runWith(program, args); }, status);
  REQUIRE(status == 0);
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("step ", 0) == 0)
      lines.push_back(line.substr(0, line.find(')') + 1)); // the loss, not the time
  return lines;
}

} // namespace

TEST_CASE("training steps stay exact against the reference, step after step", "[runtime][program][training]") {
  CHECK(runWith(kV, {"--check", "--dtype", "fp64", "--steps", "4", "--optimizer", "adamw",
                     "--clip-grad-norm", "0.1", "--weight-decay", "0.1"}) == 0);
  CHECK(runWith(kOneFOneB, {"--check", "--dtype", "fp64", "--steps", "3", "--model", "moe",
                            "--momentum", "0.9"}) == 0);
}

TEST_CASE("a resumed run repeats an uninterrupted run's losses bit for bit", "[runtime][program][training]") {
  std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                    "/pipert_resume_" + std::to_string(::getpid());
  std::vector<std::string> common{"--optimizer", "adamw", "--lr", "0.01", "--model", "moe"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.end(), common.begin(), common.end());
    return more;
  };
  std::vector<std::string> full = lossLines(kV, with({"--steps", "6"}));
  std::vector<std::string> resumed = lossLines(kV, with({"--steps", "3", "--save", dir}));
  std::vector<std::string> rest = lossLines(kV, with({"--steps", "3", "--load", dir}));
  resumed.insert(resumed.end(), rest.begin(), rest.end());
  REQUIRE(full.size() == 6);
  CHECK(resumed == full);
  CHECK(full.front() != full.back()); // the steps did train
  std::remove((dir + "/checkpoint.bin").c_str());
  std::remove(dir.c_str());
}
