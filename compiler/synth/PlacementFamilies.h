// The placement families synth lays out (one, interleaved, v, bidirectional):
// which rank and chunk hold each stage, and for bidirectional the two flows.
#pragma once

#include "synth/SynthProblem.h"

#include <string>

namespace pipec::synth {

// Lays out `family` for P ranks (v chunks for interleaved); empty error on success.
StagePlacement makeStagePlacement(PlacementFamily family, int ranks, int chunks, std::string &error);
// The same for M micro-batches: bidirectional splits them into two flows.
StagePlacement makeStagePlacement(PlacementFamily family, int ranks, int chunks, int microbatches,
                                  std::string &error);

} // namespace pipec::synth
