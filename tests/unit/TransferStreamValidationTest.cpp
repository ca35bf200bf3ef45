// The stream programs pipec lowers for BPipe's transfers (examples/bpipe.pipe),
// checked by the runtime's validation (pipert/ProgramValidation.h): as lowered
// they pass, and a transfer moved onto the wrong stream, or its message's send
// put before the copy that produces it, is refused naming the command. Here
// rather than in runtime/tests: the tables come from the compiler's lowering.
#include "ExecutorPrograms.h"
#include "TestSupport.h"

#include "pipert/ProgramEncoding.h"
#include "pipert/ProgramValidation.h"

#include <catch2/catch.hpp>

using namespace pipec;
using namespace pipec::test;

namespace {

std::string streamError(const pipert::ProgramData &data) {
  pipert::ProgramView view(data);
  return pipert::streamProgramError(view.program(), view.streams());
}

// The index of rank r's first command that `wanted` accepts.
template <typename Pred>
size_t firstCommand(const pipert::ProgramData &data, int r, Pred wanted) {
  const auto &commands = data.streams[r].commands;
  for (size_t k = 0; k < commands.size(); ++k)
    if (wanted(commands[k]))
      return k;
  FAIL("no such command on rank " << r);
  return 0;
}

} // namespace

TEST_CASE("validation: lowered transfers and their streams", "[validation]") {
  pipert::ProgramData data;
  REQUIRE(lowerProgram(readExample("bpipe"), {{"P", 4}, {"M", 8}}, data) == "");
  CHECK(streamError(data) == "");
  // Rank 0 evicts to rank 3 (P = 4: T = 3), which holds.
  auto runOf = [&](int r, pipert::OpCode kind) {
    return [&data, r, kind](const pipert::StreamCommand &c) {
      return c.cmd == pipert::StreamCmd::Run && data.ranks[r].ops[c.arg].kind == kind;
    };
  };
  SECTION("a Hold on the expert stream") {
    size_t k = firstCommand(data, 3, runOf(3, pipert::OpCode::Hold));
    data.streams[3].commands[k].stream = pipert::kExpertStream;
    CHECK_THAT(streamError(data), Catch::Matchers::Contains(
                                      "kRank3Commands[" + std::to_string(k) + "]: runs Hold op"));
    CHECK_THAT(streamError(data), Catch::Matchers::Contains("on the expert stream"));
  }
  SECTION("an Evict on a channel's stream") {
    size_t k = firstCommand(data, 0, runOf(0, pipert::OpCode::Evict));
    data.streams[0].commands[k].stream = pipert::kFirstChannelStream;
    CHECK_THAT(streamError(data), Catch::Matchers::Contains("both moves messages and runs Offload/Reload"));
  }
  SECTION("an evicted message sent on the compute stream") {
    size_t k = firstCommand(data, 0, [&](const pipert::StreamCommand &c) {
      return c.cmd == pipert::StreamCmd::Send &&
             data.messages[c.arg].gradient == pipert::kEvictedMessage;
    });
    data.streams[0].commands[k].stream = pipert::kComputeStream;
    CHECK_THAT(streamError(data), Catch::Matchers::Contains("kRank0Commands[" + std::to_string(k) +
                                                            "]: moves message"));
    CHECK_THAT(streamError(data), Catch::Matchers::Contains("not on a channel stream"));
  }
  SECTION("a Load run before its returned message is received") {
    auto &commands = data.streams[0].commands;
    size_t load = firstCommand(data, 0, runOf(0, pipert::OpCode::Load));
    size_t receive = firstCommand(data, 0, [&](const pipert::StreamCommand &c) {
      return c.cmd == pipert::StreamCmd::Receive &&
             data.messages[c.arg].gradient == pipert::kReturnedMessage;
    });
    REQUIRE(receive < load);
    pipert::StreamCommand run = commands[load];
    commands.erase(commands.begin() + long(load));
    commands.insert(commands.begin() + long(receive), run);
    CHECK_THAT(streamError(data), Catch::Matchers::Contains("before receiving its input"));
  }
}
