// The static checks of a schedule (DESIGN §3), run in order on the elaborated IR:
//   parameter copies -> coverage -> memory-op pairs -> dependencies -> communication (message order,
//   deadlock freedom) -> memory
// Each check is its own file and reports its own diagnostics; a check that needs
// an earlier one's guarantee runs only if that one passed.
#pragma once

#include "comm/CommPlan.h"
#include "cost/CostOverride.h"
#include "diag/Diagnostics.h"
#include "elab/ScheduleIR.h"

#include <optional>
#include <vector>

namespace pipec {

struct CheckOptions {
  int64_t maxActivations = -1; // --max-activations; -1: no budget
  std::vector<CostOverride> costs; // --costs then --cost, on top of the schedule's
};

// A replicated stage and the slots whose gradients must be summed.
struct SyncGroup {
  int32_t stage;
  std::vector<Slot> slots;
};

struct RankMemory {
  int64_t peakActivations = 0; // in units of one stage's activations for one micro-batch
  double peakBytes = 0;        // when the cost model gives activation_bytes
  uint32_t peakOp = 0;         // first op index where the peak is reached
  int64_t parameterChunks = 0; // stage weights held by the rank
  // Messages (activations or gradients) received before their op and held until
  // it runs (comm/CommPlan.h): a separate figure, not counted in peakActivations
  // nor in --max-activations. Set when the communication plan exists.
  int64_t peakHeldMessages = 0;
  uint32_t peakHeldOp = 0;     // first op of the step where that peak is reached
};

struct CheckReport {
  bool ok = false;
  std::vector<SyncGroup> syncGroups;
  std::optional<CommPlan> comm; // set when coverage and dependencies hold
  std::vector<RankMemory> memory;
};

// How an op changes the activations its rank stores, in units of one micro-batch
// of size 1 (check/Memory.cpp): +1 for F, R, Reload, Load, Hold; -1 for B, W,
// Offload, Evict, Return; 0 for I. A recomputed forward's drop after it runs is
// the memory check's own.
int64_t activationDelta(OpKind kind);

CheckReport runChecks(const ScheduleIR &ir, const CheckOptions &options, DiagnosticEngine &diags);

} // namespace pipec
