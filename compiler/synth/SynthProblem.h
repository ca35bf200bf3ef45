// What `pipec synth` searches over: a placement family laid out for P ranks,
// per-stage op costs, and an activation budget in the units of
// `pipec check --max-activations` (one stage's activations of one micro-batch:
// a forward adds one, a B or a W frees it).
//
// Ops are numbered densely: id = (kind * stages + stage) * M + microbatch, for
// the kinds F, I and W. A backward is always searched as I then W; the writer
// merges an I directly followed by its own W into one B.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipec::synth {

enum class PlacementFamily { One, Interleaved, V, Bidirectional };

enum SynthKind : uint8_t { kF = 0, kI = 1, kW = 2 };

struct Layout {
  PlacementFamily family = PlacementFamily::One;
  int ranks = 1, stages = 1, chunks = 1;
  std::vector<int> stageRank, stageChunk; // stage -> rank, chunk on that rank
  std::vector<std::vector<int>> rankStages; // rank -> its stages
  // The placement as a `place` declaration's right-hand side.
  std::string rankExpr, chunkExpr;
};

struct StageCosts {
  std::vector<double> F, I, W, transfer; // per stage; transfer: stage s's message
};

struct SynthProblem {
  Layout layout;
  int microbatches = 1;
  StageCosts costs;
  int64_t budget = 1;   // activations per rank
  bool split = true;    // false: every I is directly followed by its W (a B)
  uint64_t seed = 1;
  double seconds = 60;  // wall-clock cap on the search
  uint64_t iterations = 50000; // local-search moves (the deterministic budget)

  int numOps() const { return 3 * layout.stages * microbatches; }
  int opId(int kind, int stage, int mb) const {
    return (kind * layout.stages + stage) * microbatches + mb;
  }
  // The W that completes the I `id`.
  int weightOf(int id) const { return id + layout.stages * microbatches; }
  int kindOf(int id) const { return id / (layout.stages * microbatches); }
  int stageOf(int id) const { return id / microbatches % layout.stages; }
  int mbOf(int id) const { return id % microbatches; }
  int rankOf(int id) const { return layout.stageRank[stageOf(id)]; }
  double duration(int id) const {
    int s = stageOf(id);
    switch (kindOf(id)) {
    case kF: return costs.F[s];
    case kI: return costs.I[s];
    default: return costs.W[s];
    }
  }
};

// Per-rank op orders: the candidate the search moves around.
using RankOrders = std::vector<std::vector<int>>;

// Lays out `family` for P ranks (v chunks for interleaved); empty error on success.
Layout makeLayout(PlacementFamily family, int ranks, int chunks, std::string &error);

} // namespace pipec::synth
