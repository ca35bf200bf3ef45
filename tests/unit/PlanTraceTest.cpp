// A measured profile: a trace written by a built CPU program reduced to
// per-stage F, B, I, W seconds that `--costs` accepts.
#include "plan/TraceProfile.h"

#include "cost/CostInput.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

using namespace pipec;
using namespace pipec::plan;

namespace {

// Stage s on rank s, one chunk each.
std::vector<std::vector<int64_t>> oneChunkPerRank(int64_t ranks) {
  std::vector<std::vector<int64_t>> stageOf;
  for (int64_t r = 0; r < ranks; ++r)
    stageOf.push_back({r});
  return stageOf;
}

std::string errorOf(const std::string &json) {
  std::string error;
  CHECK_FALSE(profileTrace(json, "t.json", oneChunkPerRank(2), error));
  return error;
}

} // namespace

TEST_CASE("A trace's lone ops average per stage; overlap pairs are left out", "[plan]") {
  std::string json = R"j({"traceEvents": [
    {"ph": "M", "pid": 0, "name": "process_name", "args": {"name": "rank 0"}},
    {"ph": "X", "pid": 0, "tid": 0, "name": "F0.0", "ts": 0, "dur": 10},
    {"ph": "X", "pid": 0, "tid": 0, "name": "F0.1", "ts": 10, "dur": 20},
    {"ph": "X", "pid": 1, "tid": 0, "name": "B0.0", "ts": 30, "dur": 40},
    {"ph": "X", "pid": 0, "tid": 0, "name": "B0.0", "ts": 30, "dur": 40},
    {"ph": "f", "bp": "e", "id": 1, "pid": 0, "tid": 0, "name": "p2p", "ts": 50},
    {"ph": "f", "bp": "e", "id": 2, "pid": 0, "tid": 0, "name": "p2p", "ts": 30},
    {"ph": "X", "pid": 1, "tid": 0, "name": "FB(F0.2|B0.1)", "ts": 70, "dur": 1000},
    {"ph": "s", "id": 0, "pid": 0, "tid": 0, "name": "p2p", "ts": 29}]})j";
  std::string error;
  auto profile = profileTrace(json, "t.json", oneChunkPerRank(2), error);
  INFO(error);
  REQUIRE(profile);
  REQUIRE(profile->size() == 2);
  CHECK((*profile)[0].F.samples == 2);
  CHECK((*profile)[0].F.seconds == Approx(15e-6));
  CHECK((*profile)[1].B.seconds == Approx(40e-6));
  // Rank 0's B waited until its gradient arrived at 50: it computed for 20.
  CHECK((*profile)[0].B.seconds == Approx(20e-6));
  CHECK((*profile)[1].F.samples == 0);
  std::string costs = profileCostsJson(*profile);
  CHECK(costs.find("\"F[0]\"") != std::string::npos);
  CHECK(costs.find("\"F[1]\"") == std::string::npos); // not measured: left to the defaults
}

TEST_CASE("Malformed traces are errors naming the event", "[plan]") {
  CHECK(errorOf("{}") == "t.json: field 'traceEvents' is missing or not an array");
  CHECK(errorOf(R"j({"traceEvents": [1]})j") == "t.json: traceEvents[0] is not an object");
  CHECK(errorOf(R"j({"traceEvents": [{"ph": "X", "name": "F0.0", "pid": 0}]})j") ==
        "t.json: traceEvents[0] needs a string 'name', an integer 'pid' and numbers 'ts' and 'dur'");
  CHECK(errorOf(R"j({"traceEvents": [{"ph": "X", "name": "F0.0", "pid": 0, "ts": 0, "dur": -1}]})j") ==
        "t.json: traceEvents[0] has a negative or non-finite 'ts' or 'dur'");
  CHECK(errorOf(R"j({"traceEvents": [{"ph": "X", "name": "F3.0", "pid": 0, "ts": 0, "dur": 1}]})j")
            .find("('F3.0' on rank 0) is on a rank or chunk the placement does not have") !=
        std::string::npos);
  CHECK(errorOf(R"j({"traceEvents": [{"ph": "X", "name": "F0.0", "pid": 7, "ts": 0, "dur": 1}]})j")
            .find("on rank 7") != std::string::npos);
}

TEST_CASE("A CPU program's trace becomes costs that --costs accepts", "[plan]") {
  // Written by `pipec build examples/zb_h1.pipe --target cpu -D P=2 -D M=4`
  // and the program's `--trace` (see Inputs/trace/README.md).
  std::string error;
  std::string path = std::string(PIPEC_PLAN_INPUTS_DIR) + "/trace/zb_h1-p2-m4.trace.json";
  auto profile = readTraceProfile(path, oneChunkPerRank(2), error);
  INFO(error);
  REQUIRE(profile);
  REQUIRE(profile->size() == 2);
  for (const StageProfile &stage : *profile) {
    // ZB-H1 splits every backward: four F, I and W per stage, no full B.
    CHECK(stage.F.samples == 4);
    CHECK(stage.I.samples == 4);
    CHECK(stage.W.samples == 4);
    CHECK(stage.B.samples == 0);
    for (const OpProfile *op : {&stage.F, &stage.I, &stage.W})
      CHECK(op->seconds > 0);
  }
  llvm::SmallString<128> costsPath;
  REQUIRE_FALSE(llvm::sys::fs::createTemporaryFile("profile", "json", costsPath));
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(costsPath, ec);
    out << profileCostsJson(*profile);
  }
  auto costs = readCostsFile(std::string(costsPath), error);
  llvm::sys::fs::remove(costsPath);
  INFO(error);
  REQUIRE(costs);
  CHECK_FALSE(costs->empty());
}
