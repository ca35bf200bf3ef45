// What `pipec synth` searches over: a placement family laid out for P ranks,
// per-stage op costs, and an activation budget in the units of
// `pipec check --max-activations` (one stage's activations of one micro-batch:
// a forward adds one, a B or a W frees it).
//
// Ops are numbered densely: id = (kind * stages + stage) * M + microbatch, for
// the kinds F, I and W. A backward is always searched as I then W; the writer
// merges an I directly followed by its own W into one B.
//
// An entry of a rank's order is an op id, or an F's id with kPaired set: that F
// runs as an overlap pair with the I that follows it (F & B when the I's own W
// follows too and the pair takes it, see pairTakesW).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace pipec::synth {

enum class PlacementFamily { One, Interleaved, V, Bidirectional, File };

enum SynthKind : uint8_t { kF = 0, kI = 1, kW = 2 };

// A range of micro-batches with its own placement (DualPipe's two flows).
struct FlowPlacement {
  std::string name;
  int begin = 0, end = 0;                 // micro-batches [begin, end)
  std::vector<int> stageRank, stageChunk; // stage -> rank, chunk on that rank
  std::string rankExpr, chunkExpr;        // as a `place` declaration's right-hand side
};

struct StagePlacement {
  PlacementFamily family = PlacementFamily::One;
  int ranks = 1, stages = 1, chunks = 1;
  int copies = 1; // slots that may hold one stage (bidirectional: 2)
  // Of the first flow (the only one unless `flows` has several).
  std::vector<int> stageRank, stageChunk; // stage -> rank, chunk on that rank
  std::vector<std::vector<int>> rankStages; // rank -> its stages
  // The placement as a `place` declaration's right-hand side.
  std::string rankExpr, chunkExpr;
  // Set when micro-batches are placed by flows (bidirectional, a file's flows);
  // empty: every micro-batch follows stageRank.
  std::vector<FlowPlacement> flows;

  int flowOf(int mb) const {
    for (size_t f = 0; f < flows.size(); ++f)
      if (mb < flows[f].end)
        return int(f);
    return 0;
  }
  int rankOf(int stage, int mb) const {
    return flows.empty() ? stageRank[stage] : flows[flowOf(mb)].stageRank[stage];
  }
  int chunkOf(int stage, int mb) const {
    return flows.empty() ? stageChunk[stage] : flows[flowOf(mb)].stageChunk[stage];
  }
  // How many stages micro-batch `mb` has on `rank` (the activations it may hold there).
  int stagesOn(int rank, int mb) const {
    if (flows.empty())
      return int(rankStages[rank].size());
    const FlowPlacement &flow = flows[flowOf(mb)];
    return int(std::count(flow.stageRank.begin(), flow.stageRank.end(), rank));
  }
};

struct StageCosts {
  std::vector<double> F, I, W, transfer; // per stage; transfer: stage s's message
  // With --overlap: the duration of a pair of forward stage f and backward
  // stage b, at f * stages + b, with an I (pairI) or a whole B (pairB).
  std::vector<double> pairI, pairB;
};

struct SynthProblem {
  StagePlacement layout;
  int microbatches = 1;
  StageCosts costs;
  int64_t budget = 1;   // activations per rank
  bool split = true;    // false: every I is directly followed by its W (a B)
  bool overlap = false; // the search may form F & B (F & I) pairs
  uint64_t seed = 1;
  double seconds = 60;  // wall-clock cap on the search
  uint64_t iterations = 50000; // local-search moves (the deterministic budget)
  // When the whole search must stop (synth --time): construction, repair and
  // local search check it as they go, not only between candidates.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  bool pastDeadline() const { return std::chrono::steady_clock::now() > deadline; }

  int numOps() const { return 3 * layout.stages * microbatches; }
  int opId(int kind, int stage, int mb) const {
    return (kind * layout.stages + stage) * microbatches + mb;
  }
  // The W that completes the I `id`.
  int weightOf(int id) const { return id + layout.stages * microbatches; }
  int kindOf(int id) const { return id / (layout.stages * microbatches); }
  int stageOf(int id) const { return id / microbatches % layout.stages; }
  int mbOf(int id) const { return id % microbatches; }
  int rankOf(int id) const { return layout.rankOf(stageOf(id), mbOf(id)); }
  int chunkOf(int id) const { return layout.chunkOf(stageOf(id), mbOf(id)); }
  double duration(int id) const {
    int s = stageOf(id);
    switch (kindOf(id)) {
    case kF: return costs.F[s];
    case kI: return costs.I[s];
    default: return costs.W[s];
    }
  }

  static constexpr int kPaired = 1 << 30;
  static int idOf(int entry) { return entry & ~kPaired; }
  static bool paired(int entry) { return entry & kPaired; }
  double pairDuration(int forward, int backward, bool whole) const {
    size_t at = size_t(stageOf(forward)) * layout.stages + stageOf(backward);
    return whole ? costs.pairB[at] : costs.pairI[at];
  }
  // Whether a pair F & I directly followed by that I's W runs as F & B: always
  // without split, else when the pair with the whole B is shorter.
  bool pairTakesW(int forward, int backward) const {
    return !split || pairDuration(forward, backward, true) <
                         pairDuration(forward, backward, false) + duration(weightOf(backward)) - 1e-12;
  }
};

// Per-rank op orders: the candidate the search moves around.
using RankOrders = std::vector<std::vector<int>>;

} // namespace pipec::synth
