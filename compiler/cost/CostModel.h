// The one cost model of pipec, used by the memory check, the simulator and the
// CUDA backend's overlap plans: op durations (per stage when given), point-to-
// point latency and bandwidth, activation sizes, and the sub-operation costs
// that decide how long an overlap pair takes.
//
// Defaults: F=1, B=2, W=1 for one rank's share of the model, so that schedules
// compare fairly: a stage's default is that share divided by v, the stages each
// rank holds per copy of the model (v = stages / ranks: 1 for 1F1B and DualPipe,
// whose two stages on a rank are copies of each other; 2 for ZB-V and
// DualPipeV; v for interleaved 1F1B). I=B-W (at least 0), an overlap pair F+B,
// p2p=0, unlimited bandwidth, activation_bytes unknown (0). A given cost (a
// costs block, --costs, --cost) is per stage, as given. Which given setting wins
// is CostResolution.h's rule. p2p and bandwidth of stage s are those of the
// link that carries stage s's messages.
#pragma once

#include "cost/CostOverride.h"
#include "cost/OverlapPlan.h"
#include "cost/SubOps.h"
#include "elab/ScheduleIR.h"

#include <algorithm>
#include <array>
#include <vector>

namespace pipec {

class CostModel {
public:
  // Builds the model for `ir`: defaults, then ir.costs, then `overrides`.
  static CostModel build(const ScheduleIR &ir, const std::vector<CostOverride> &overrides);

  // The stages each rank holds per copy of the model (v), and the fraction of
  // a rank's share one stage holds (1/v): what the default costs are scaled by.
  static double stagesPerRank(const ScheduleIR &ir);
  double defaultScale() const { return defaultScale_; }

  // An op's duration on its stream. Memory ops: Offload and Reload take their
  // copy's time on the copy stream; Evict, Hold, Return and Load take none there
  // (their time is the message's, moveTransfer).
  double op(OpKind kind, int64_t stage) const { return op_[static_cast<int>(kind)][stage]; }
  // Link time of moving `stage`'s stored activation to a partner rank (Evict ->
  // Hold, `evicting`) or back (Return -> Load): the `Evict` / `Load` costs.
  double moveTransfer(int64_t stage, bool evicting) const {
    return (evicting ? evictTransfer_ : loadTransfer_)[stage];
  }
  // Duration of an overlap pair of forward stage `f` and backward (B or I) stage `b`.
  double pair(int64_t forwardStage, OpKind backwardKind, int64_t backwardStage) const;
  // Explicit FB of a forward stage; negative when not given.
  double explicitPair(int64_t forwardStage) const { return fb_[forwardStage]; }
  // Transfer time of one activation or gradient of `stage` (latency + size / bandwidth).
  double transfer(int64_t stage) const;
  // Its latency part; the rest is serialisation, what a shared link slows (sim/LinkModel.h).
  double latency(int64_t stage) const { return latency_[stage]; }
  double activationBytes(int64_t stage) const { return activationBytes_[stage]; }
  // The part of a stage's activation bytes an I keeps until its W (the rest is
  // freed at the I): `activation_bytes_w`, by default all of them.
  double activationBytesUntilW(int64_t stage) const { return activationBytesW_[stage]; }
  // What a recomputed forward keeps of its activation bytes until its R: the
  // stage input, `input_bytes` (default 0), at most activation_bytes.
  double inputBytes(int64_t stage) const { return inputBytes_[stage]; }
  bool hasSubOps(int64_t stage) const { return hasSubOps_[stage]; }
  // Sub-operation cost of `stage`, forward (true) or backward (false).
  double subOp(int64_t stage, SubOp op, bool forward) const {
    return subOps_[stage][forward ? 0 : 1][static_cast<int>(op)];
  }
  const SubOpDurations &subOps(int64_t stage, bool forward) const {
    return subOps_[stage][forward ? 0 : 1];
  }
  // The share of the GPU's SMs a communication sub-operation holds while it
  // runs (`comm_sm_share`, default 0): compute overlapped with it runs at 1 - share.
  double commSmShare(int64_t stage) const { return commSmShare_[stage]; }

private:
  std::vector<double> op_[ast::kNumOpKinds]; // [OpKind][stage]
  std::vector<double> evictTransfer_, loadTransfer_; // [stage]
  std::vector<double> fb_;                // explicit FB per forward stage, <0 when not given
  std::vector<double> activationBytes_, activationBytesW_, inputBytes_;
  std::vector<std::array<SubOpDurations, 2>> subOps_; // [stage][forward, backward]
  std::vector<bool> hasSubOps_;
  std::vector<double> commSmShare_; // [stage], in [0, 1)
  std::vector<double> latency_, bandwidth_; // per stage; bandwidth 0: unlimited
  double defaultScale_ = 1;
};

// The two-stream plan of a pair of forward stage `forwardStage` and backward
// stage `backwardStage` under `costs`' sub-operation costs. Both stages run on
// one GPU; the larger of their communication SM shares is what that GPU's
// communication kernels hold.
inline OverlapPlan planOverlap(const CostModel &costs, int64_t forwardStage,
                               int64_t backwardStage) {
  return planOverlap(costs.subOps(forwardStage, true), costs.subOps(backwardStage, false),
                     std::max(costs.commSmShare(forwardStage), costs.commSmShare(backwardStage)));
}

} // namespace pipec
