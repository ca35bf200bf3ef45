// The cost model the simulator uses: op durations (per stage when given),
// point-to-point latency and bandwidth, activation sizes, and the sub-operation
// costs that decide how long an overlap pair takes.
//
// Sources, later ones winning: defaults (F=1, B=2, W=1, I=B-W, FB=F+B, p2p=0),
// the schedule's `costs { }` block, `--costs FILE.json`, then `--cost NAME=V`.
// A name may carry a stage: `F[0]=1.5` sets stage 0 only.
#pragma once

#include "elab/ScheduleIR.h"
#include "pipert/SubOp.h"

#include "llvm/ADT/StringRef.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace pipec {

// Sub-operations of one chunk, in DeepSeek-V3's split (report, Figure 4): compute
// (attention, MLP) and communication (the MoE dispatch and combine all-to-alls).
using SubOp = pipert::SubOp;
inline constexpr int kSubOps = 4;

struct CostOverride {
  std::string name;
  int64_t stage = -1; // -1: every stage
  double value = 0;
};

class CostModel {
public:
  // Builds the model for `ir`: defaults, then ir.costs, then `overrides` in order.
  static CostModel build(const ScheduleIR &ir, const std::vector<CostOverride> &overrides);

  double op(OpKind kind, int64_t stage) const { return op_[static_cast<int>(kind)][stage]; }
  // Duration of an overlap pair of forward stage `f` and backward (B or I) stage `b`.
  double pair(int64_t forwardStage, OpKind backwardKind, int64_t backwardStage) const;
  // Transfer time of one activation or gradient of `stage` (latency + size / bandwidth).
  double transfer(int64_t stage) const;
  double activationBytes(int64_t stage) const { return activationBytes_[stage]; }
  bool hasSubOps(int64_t stage) const { return hasSubOps_[stage]; }
  // Sub-operation cost of `stage`, forward (true) or backward (false).
  double subOp(int64_t stage, SubOp op, bool forward) const {
    return subOps_[stage][static_cast<int>(op) * 2 + (forward ? 0 : 1)];
  }

private:
  std::vector<double> op_[4];             // [F, B, I, W][stage]
  std::vector<double> fb_;                // explicit FB per forward stage, <0 when not given
  std::vector<double> activationBytes_;
  std::vector<std::array<double, 2 * kSubOps>> subOps_;
  std::vector<bool> hasSubOps_;
  double latency_ = 0, bandwidth_ = 0;    // bandwidth 0: unlimited
};

// Parses `NAME=VALUE` or `NAME[STAGE]=VALUE`; nullopt (with `error` set) if malformed.
std::optional<CostOverride> parseCostOverride(llvm::StringRef text, std::string &error);
// Reads a JSON object of "NAME" or "NAME[STAGE]" to numbers.
std::optional<std::vector<CostOverride>> readCostsFile(const std::string &path, std::string &error);
// Whether `name` is a cost the model knows.
bool isKnownCost(llvm::StringRef name);

} // namespace pipec
