// `pipec synth` without the command line: lay out the family, read the costs
// through the real front end, search (list scheduling, then local search),
// write the .pipe text, and run the real checks and simulator on it. Nothing is
// returned as a schedule unless `pipec check --max-activations budget` accepts it.
#pragma once

#include "cost/CostOverride.h"
#include "synth/LocalSearch.h"
#include "synth/SynthProblem.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace pipec::synth {

// What a search can take (it re-simulates the whole schedule per move); the
// command line refuses larger -D values, synth a file placement beyond them.
constexpr int kMaxRanks = 64, kMaxMicrobatches = 512, kMaxOps = 60000;

struct SynthRequest {
  PlacementFamily family = PlacementFamily::One;
  int ranks = 1, microbatches = 1, chunks = 2; // chunks: interleaved's v
  // PlacementFamily::File: the schedule file whose placement is searched over,
  // elaborated with `defines` (its P and M decide ranks and micro-batches).
  std::string placementFile;
  std::vector<std::pair<std::string, int64_t>> defines;
  bool overlap = false; // --overlap: the search may form F & B pairs
  std::vector<CostOverride> costs;           // --costs then --cost
  int64_t budget = 1;
  bool split = true;
  uint64_t seed = 1;
  double seconds = 60;
  uint64_t iterations = 50000;
  std::string commandLine; // recorded in the header
};

struct SynthOutcome {
  bool ok = false;
  std::string error;        // why nothing was produced (diagnostics included)
  std::string text;         // the .pipe file
  double makespan = 0;      // by `pipec sim`'s simulator
  double bound = 0;
  double seconds = 0;
  SearchStats stats;
  int64_t peakActivations = 0;
  double gap() const { return bound > 0 ? (makespan - bound) / bound : 0; }
};

// `progress` receives one line at a time for stderr.
SynthOutcome synthesize(const SynthRequest &request,
                        const std::function<void(const std::string &)> &progress);

} // namespace pipec::synth
