// Writes a synthesized schedule as an explicit .pipe file: literal topology,
// the family's placement in closed form, and a `rank N { }` program per rank
// in which every op names its chunk and micro-batch. Without split, each I and
// its W are written as one B.
#pragma once

#include "synth/SynthProblem.h"

#include <string>
#include <vector>

namespace pipec::synth {

// `header`: comment lines (without "// ") that open the file.
std::string writeSynthPipe(const SynthProblem &problem, const RankOrders &orders,
                           const std::string &name, const std::vector<std::string> &header);

} // namespace pipec::synth
