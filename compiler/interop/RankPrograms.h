// Rank programs as the one .pipe writer (PipeWriter.h) writes them, and how it
// finds the ranks whose programs share a shape. A rank's steps are cut into
// runs: a body of up to four steps repeated with every micro-batch one higher
// (`for i in 0..n { F(0, mb = i + 3); B(0, mb = i); }`). A group of ranks
// shares a shape when every rank's steps read as one rank's runs in order,
// each repeated as often as it goes on (0 times included: the last rank of
// 1F1B has no warm-up), and the counts and first micro-batches are affine
// functions of the rank over the group: one `rank r { }` program,
// `for i in 0..P - r { F(0, mb = i); }`. Every shared program is expanded
// again for each of its ranks and compared op for op with the rank's steps
// before it is used, so a program the writer shares elaborates to exactly
// the steps it was given.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace pipec {

// One op as a program writes it: `F(chunk, mb = m)`.
struct PipeOp {
  char kind = 'F'; // F, B, I or W
  int32_t chunk = 0;
  int64_t microbatch = 0;
};

// A step of a rank's program: one op, or a pair `A & B` in the order written.
struct PipeStep {
  PipeOp ops[2];
  int count = 1;
};

// `body` (the steps of the first iteration) run `count` times, every
// micro-batch one higher each time.
struct StepRun {
  std::vector<PipeStep> body;
  int64_t count = 1;
};

// A rank's steps as runs, the one that covers most steps first from each
// point: a body of up to four steps repeated at least twice and covering at
// least `minCovered` steps; a step that starts no such repetition is a run of
// one.
std::vector<StepRun> stepRuns(const std::vector<PipeStep> &steps, size_t minCovered);

// base + slope * r.
struct RankAffine {
  int64_t base = 0, slope = 0;
  int64_t at(int64_t rank) const { return base + slope * rank; }
};

struct SharedOp {
  char kind = 'F';
  int32_t chunk = 0;
  RankAffine microbatch; // of the run's first iteration
};

struct SharedStep {
  SharedOp ops[2];
  int count = 1;
};

struct SharedRun {
  std::vector<SharedStep> body;
  RankAffine count; // 0 on a rank that lacks the run
};

// One program for the ranks firstRank..endRank (half-open).
struct SharedProgram {
  int64_t firstRank = 0, endRank = 0;
  std::vector<SharedRun> runs;
};

// The steps `program` runs on `rank`.
std::vector<PipeStep> expandSharedProgram(const SharedProgram &program, int64_t rank);

// The groups of consecutive ranks (in rank order, three or more each: two
// ranks fit any affine function) whose programs share one shape; ranks in no
// group keep programs of their own.
std::vector<SharedProgram> shareRankPrograms(const std::vector<std::vector<PipeStep>> &programs);

} // namespace pipec
