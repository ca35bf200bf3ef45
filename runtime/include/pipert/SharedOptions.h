// The options the CPU and the CUDA programs both take, in one table, so that an
// option means the same and defaults the same in both.
#pragma once

#include "pipert/OptionTable.h"

#include <vector>

namespace pipert {

// A longer --timeout is taken as this: a deadline of now plus 1e10 s or more
// overflows the clocks' tick count and would fire at once.
constexpr double kMaxTimeoutSeconds = 1e6;

// --steps, --hidden, --seq, --model, --model-path, --check, --tolerance, --trace, --seed,
// --timeout.
std::vector<OptionSpec> sharedProgramOptions();

// The shared options with a program's `own` inserted after --model-path (the program's own
// precision, layout and transport options read best next to it).
std::vector<OptionSpec> withOwnOptions(const std::vector<OptionSpec> &own);

} // namespace pipert
