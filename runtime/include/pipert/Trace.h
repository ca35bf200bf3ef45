// Per-op timing of a step as a Chrome/Perfetto trace: one process per rank, one
// slice per op. The CPU executor measures it with a clock, the CUDA executor
// with CUDA events; both write it here.
#pragma once

#include "pipert/Program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pipert {

struct OpTiming {
  int rank;
  uint32_t op;
  double startMicros, endMicros; // from the step's start
};

// Prints an error and returns false when the file cannot be written.
bool writeTrace(const std::string &path, const Program &program, const std::vector<OpTiming> &timings);

} // namespace pipert
