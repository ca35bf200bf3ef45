// Elaboration: a parsed, name-resolved schedule plus parameter values becomes
// the ScheduleIR. Steps, in order: bind parameters (defaults, then -D), run the
// top-level lets and requires, evaluate topology, place stages (flows), then run
// every rank's program, expanding loops, ifs and lets and resolving implicit
// micro-batches and W's.
#pragma once

#include "diag/Diagnostics.h"
#include "elab/ScheduleIR.h"
#include "support/ResourceLimits.h"
#include "syntax/AST.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace pipec {

// Defaults from support/ResourceLimits.h, as every command's.
struct ElabLimits {
  uint64_t maxOps = limits::kMaxOps;               // about 640 MB of IR
  uint64_t maxIterations = limits::kMaxIterations; // loop iterations, all ranks together
  // When elaboration must stop (the planner's --time): checked every 16K ops;
  // past it elaboration fails without a diagnostic of its own, and the caller,
  // which set it, says why. max(): never.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// A name given on the command line for a parameter (-D) or a cost (--cost,
// --sweep), kept to refuse one that means both (frontend/FlagNames.h).
struct FlagName {
  std::string name;          // as the flag reads it: "W", "B[3]" is "B"
  std::string flag;          // as written: "-D W=2", "--sweep W=1,2"
  bool asCost = false;       // the meaning the flag gave it
  bool explicitKind = false; // written param:NAME or cost:NAME: not ambiguous
};

struct ElabOptions {
  std::vector<std::pair<std::string, int64_t>> defines; // -D NAME=VALUE, in order
  ElabLimits limits;
  std::vector<FlagName> flagNames;
};

// Hard bounds on topology, whatever the limits: beyond them pipec reports an error
// instead of trying to allocate.
inline constexpr int64_t kMaxRanks = 1 << 20;
inline constexpr int64_t kMaxStages = 1 << 24;
inline constexpr int64_t kMaxMicrobatches = 1 << 30;

std::optional<ScheduleIR> elaborate(const ast::Schedule &schedule, const ElabOptions &options,
                                    DiagnosticEngine &diags);

} // namespace pipec
