// Writes a synthesized schedule as an explicit .pipe file: literal topology,
// the family's placement in closed form, and a `rank N { }` program per rank
// in which every op names its chunk and micro-batch. An I directly followed by
// its own W is written as one B when that costs the same.
#pragma once

#include "synth/SynthProblem.h"

#include <string>
#include <vector>

namespace pipec::synth {

// `header`: comment lines (without "// ") that open the file.
std::string writeSynthPipe(const SynthProblem &problem, const RankOrders &orders,
                           const std::string &name, const std::vector<std::string> &header,
                           const std::vector<double> &backwardCost);

} // namespace pipec::synth
