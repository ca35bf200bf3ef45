// Random pipeline schedules for property tests, written out as .pipe source with
// explicit `rank N { ... }` programs and `mb =` on every op.
//
// valid() builds a schedule that satisfies coverage and dependencies: it takes a
// random topological order of the data dependencies of every (stage, micro-batch)
// — F(s-1) -> F(s), F(S-1) -> B(S-1), B(s+1) -> B(s), I -> W — and projects it
// onto the ranks, sometimes splitting B into I ... W and sometimes joining an
// adjacent forward and backward of different micro-batches into an overlap pair.
// mutate() then perturbs it the way a person editing a schedule might.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace pipec::test {

enum class GenPlacement {
  Linear,      // stages = P, stage s on rank s
  V,           // stages = 2P, down then back up
  Interleaved, // stages = 2P, stage s on rank s % P chunk s / P
  TwoFlows,    // stages = P, DualPipe-style: two flows from both ends, copies 2
};

struct GenOp {
  char kind = 'F'; // 'F', 'B', 'I' or 'W'
  int chunk = 0;
  int mb = 0;
};

// A compute step: one op, or an overlap pair stored forward first.
struct GenStep {
  std::vector<GenOp> ops;
  bool writtenBackwardFirst = false; // write a pair as `B & F` (the IR stores F first)
};

struct GenSchedule {
  int P = 1, S = 1, M = 1;
  GenPlacement placement = GenPlacement::Linear;
  int flowSplit = 0; // TwoFlows: flow "down" is [0, flowSplit), "up" [flowSplit, M)
  std::vector<std::vector<GenStep>> ranks;
  std::string history; // how it was made, for reproduction

  std::pair<int, int> slot(int stage, int mb) const; // (rank, chunk)
  int stageOf(int rank, int chunk, int mb) const;     // -1: no stage there
  std::string source() const;
};

class ScheduleGenerator {
public:
  explicit ScheduleGenerator(uint32_t seed) : rng_(seed) {}

  GenSchedule valid();
  // Applies one random mutation (swap adjacent steps, move a step, drop an op,
  // swap two ops' micro-batches, split or join an overlap pair) and records it
  // in `history`. Does nothing when the schedule is too small for it.
  void mutate(GenSchedule &schedule);

  int pick(int n) { return n <= 1 ? 0 : static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  bool chance(double p) { return (rng_() % 1000000u) < static_cast<uint32_t>(p * 1000000.0); }

private:
  std::mt19937 rng_;
};

} // namespace pipec::test
