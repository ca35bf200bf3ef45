// Writes a synthesized schedule as an explicit .pipe file through the one
// writer import uses too (interop/PipeWriter.h): fixed sizes, the family's
// placement in closed form (flows for two directions), and rank programs in
// which every op names its chunk and micro-batch: one `rank r { }` program for
// ranks that share a shape, a `rank N { }` program for each other rank. Without
// split, each I and its W are written as one B; a pair is written
// `F(..) & B(..)` or `F(..) & I(..)`.
#pragma once

#include "synth/SynthProblem.h"

#include <string>
#include <vector>

namespace pipec::synth {

// The `place` or `flow` lines of the layout.
std::string writePlacement(const StagePlacement &layout);

// `header`: comment lines (without "// ") that open the file.
// `loops`: runs of steps that repeat one micro-batch later are written as
// `for` loops (each rank's warm-up, steady state and cool-down) and ranks
// that share a shape share a program, else every step on its own line.
std::string writeSynthPipe(const SynthProblem &problem, const RankOrders &orders,
                           const std::string &name, const std::vector<std::string> &header,
                           bool loops = true);

} // namespace pipec::synth
