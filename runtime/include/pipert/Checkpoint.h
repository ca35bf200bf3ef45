// Checkpoints of a training run: DIR/checkpoint.bin holds every stage copy's
// parameters and optimizer state, the number of steps taken, and an identity
// line (schedule, sizes, model, dtype, optimizer) a resumed run must match.
// The data sampler is a pure function of (seed, step), so the step count is its
// whole state.
//
// Format (little-endian as the machine writes it; one version):
//   "PIPECKPT" u32 version=1, u32 element bytes (4|8), i64 steps taken,
//   u32 n, n bytes identity, u32 copies; per copy: i32 stage index,
//   u32 parameters; per parameter: u32 n, n bytes name, u64 rows, u64 cols,
//   u8 has momentum/first moment, u8 has second moment, the value's elements,
//   then the moments' elements if present;
//   u64 FNV-1a of every byte before it.
// Any difference (checksum, identity, copy count, stage, name, shape) is a
// CheckpointError naming the file and what differs. Every number read is
// checked before use (the step count against kMaxCheckpointSteps, flags 0 or
// 1); the file must be a regular one (pipert/RegularFile.h) no larger than a
// checkpoint of this run can be.
#pragma once

#include "pipert/Optimizer.h"
#include "pipert/Stage.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace pipert {

// The most steps a checkpoint may record: a resumed run adds its own steps
// (at most 2^31) to it without overflow.
inline constexpr int64_t kMaxCheckpointSteps = int64_t(1) << 62;

struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string checkpointFile(const std::string &dir);

// Creates `dir` if needed and writes the checkpoint (replacing an older one).
template <typename T>
void saveCheckpoint(const std::string &dir, const std::string &identity, int64_t steps,
                    const std::vector<Stage<T> *> &copies,
                    const std::vector<StageOptimizerState<T> *> &states);

// Restores values and optimizer state into `copies`/`states` (the same order as
// saved); returns the steps taken.
template <typename T>
int64_t loadCheckpoint(const std::string &dir, const std::string &identity,
                       const std::vector<Stage<T> *> &copies,
                       const std::vector<StageOptimizerState<T> *> &states);

} // namespace pipert
