// A measured profile: a Chrome trace that our executors write (`--trace`, see
// runtime/include/pipert/Trace.h) reduced to per-stage F, B, I and W times, as
// a costs object that `pipec sim --costs` accepts.
#pragma once

#include "llvm/ADT/StringRef.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipec::plan {

struct OpProfile {
  double seconds = 0; // mean duration, from the op's last input's arrival to its end
  int64_t samples = 0;
};

struct StageProfile {
  OpProfile F, B, I, W;
};

// One lone op of a trace: its stage, kind (0..3: F, B, I, W) and duration in
// seconds, from its last input's arrival to its end.
struct TracedOp {
  size_t stage;
  int kind;
  double seconds;
};
std::optional<std::vector<TracedOp>> traceOps(llvm::StringRef json, llvm::StringRef name,
                                              const std::vector<std::vector<int64_t>> &stageOf,
                                              std::string &error);

// Reads the trace's lone op slices ("F0.3": kind, chunk, micro-batch; overlap
// pairs "FB(...)" are skipped: their halves cannot be told apart) and averages
// them per stage. A slice includes the op's wait for its inputs; the time
// before its last incoming message arrow ends is not counted. `stageOf[rank][chunk]` names each slice's stage. nullopt
// with `error` set on malformed traces or unknown ranks/chunks.
std::optional<std::vector<StageProfile>> profileTrace(llvm::StringRef json, llvm::StringRef name,
                                                      const std::vector<std::vector<int64_t>> &stageOf,
                                                      std::string &error);
// Reads the trace file (at most the 12 MiB input limit) and profiles it.
std::optional<std::vector<StageProfile>> readTraceProfile(llvm::StringRef path,
                                                          const std::vector<std::vector<int64_t>> &stageOf,
                                                          std::string &error);
// For `sim --jitter trace:FILE`: every op's duration over the mean of its stage
// and kind, grouped by kind (F, B, I, W). nullopt with `error` when the file
// cannot be read or parsed, or times no op.
std::optional<std::array<std::vector<double>, 4>>
readTraceRatios(llvm::StringRef path, const std::vector<std::vector<int64_t>> &stageOf,
                std::string &error);
// {"F[0]": 1.5e-3, ...} for every measured op kind of every stage, in seconds.
std::string profileCostsJson(const std::vector<StageProfile> &profile);

} // namespace pipec::plan
