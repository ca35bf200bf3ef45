// Stream programs for hand-written test tables, made as the compiler's lowering
// (compiler/codegen/StreamLowering.h) makes them: receives posted in the proved
// order just before they are needed, sends right after their op, events for
// every edge between streams, and an overlap pair split into its parts on the
// compute and expert streams in a fixed plan (the backward's combine first).
// Only for tests that cannot run pipec: the runtime has no lowering of its own.
#pragma once

#include "pipert/Program.h"
#include "pipert/StreamProgram.h"

#include <vector>

namespace pipert::test {

struct OwnedStreams {
  std::vector<std::vector<StreamCommand>> commands; // per rank
  std::vector<RankStreams> ranks;
  StreamProgram program{};
};

OwnedStreams lowerForTest(const Program &program);

} // namespace pipert::test
