// Per-op timing of a step as a Chrome/Perfetto trace, drawn as `pipec sim
// --trace` draws the simulated step, so the two can be put side by side: one
// process per rank, one slice per step named as the compiler names ops ("F0.3":
// kind, chunk, micro-batch within its flow; "FB(F0.3|B1.2)" for an overlap
// pair), and a flow arrow per message from the step that sends it to the step
// that receives it. The CPU executor measures with a clock, the CUDA executor
// with CUDA events; both write it here.
#pragma once

#include "pipert/Program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pipert {

// One timed op, or one overlap pair timed as a whole (`op` is its first half).
struct OpTiming {
  int rank;
  uint32_t op;
  double startMicros, endMicros; // from the step's start
};

// The trace as JSON text. Timings may cover only some ranks (one NCCL process):
// a message with one end elsewhere gets only that end of its arrow.
std::string traceJson(const Program &program, const std::vector<OpTiming> &timings);

// Writes traceJson to `path`; on failure prints the path and the reason to
// stderr and returns false.
bool writeTrace(const std::string &path, const Program &program, const std::vector<OpTiming> &timings);

// "F0.3" for op `op` of `rank`, as the compiler's simulator names it.
std::string opLabel(const Program &program, int rank, uint32_t op);

} // namespace pipert
