#include "cost/CostModel.h"

#include "cost/CostResolution.h"

#include <algorithm>

namespace pipec {

double CostModel::stagesPerRank(const ScheduleIR &ir) {
  if (ir.numRanks <= 0 || ir.numStages <= 0)
    return 1;
  return double(ir.numStages) / double(ir.numRanks);
}

CostModel CostModel::build(const ScheduleIR &ir, const std::vector<CostOverride> &overrides) {
  ResolvedCosts costs(ir, overrides);
  size_t stages = static_cast<size_t>(ir.numStages);
  CostModel model;
  for (auto &table : model.op_)
    table.resize(stages);
  model.fb_.resize(stages);
  model.evictTransfer_.resize(stages);
  model.loadTransfer_.resize(stages);
  model.activationBytes_.resize(stages);
  model.activationBytesW_.resize(stages);
  model.inputBytes_.resize(stages);
  model.subOps_.resize(stages);
  model.hasSubOps_.resize(stages);
  model.commSmShare_.resize(stages);
  model.latency_.resize(stages);
  model.bandwidth_.resize(stages);
  model.defaultScale_ = 1 / stagesPerRank(ir);
  const double scale = model.defaultScale_;
  static const char *kSubOpNames[2][kSubOps] = {
      {"attn_f", "dispatch_f", "mlp_f", "combine_f"},
      {"attn_b", "dispatch_b", "mlp_b", "combine_b"}};
  for (size_t s = 0; s < stages; ++s) {
    double f = costs.get("F", s, 1 * scale), b = costs.get("B", s, 2 * scale),
           w = costs.get("W", s, 1 * scale);
    model.op_[static_cast<int>(OpKind::F)][s] = f;
    model.op_[static_cast<int>(OpKind::B)][s] = b;
    model.op_[static_cast<int>(OpKind::W)][s] = w;
    model.op_[static_cast<int>(OpKind::I)][s] = costs.get("I", s, std::max(0.0, b - w));
    model.op_[static_cast<int>(OpKind::R)][s] = costs.get("R", s, f); // a replayed forward
    model.fb_[s] = costs.get("FB", s, -1);
    model.activationBytes_[s] = costs.get("activation_bytes", s, 0);
    model.activationBytesW_[s] = costs.get("activation_bytes_w", s, model.activationBytes_[s]);
    model.inputBytes_[s] = std::min(costs.get("input_bytes", s, 0), model.activationBytes_[s]);
    model.latency_[s] = costs.get("p2p", s, 0);
    model.bandwidth_[s] = costs.get("bandwidth", s, 0);
    // Memory ops: a copy to host memory and back on the copy stream, a transfer to
    // a partner rank and back on the link. Without sizes and rates, a stage's
    // activation is taken to move in about the time its forward made it.
    double bytes = model.activationBytes_[s], host = costs.get("host_bandwidth", s, 0);
    double copy = bytes > 0 && host > 0 ? bytes / host : f;
    double link = bytes > 0 && model.bandwidth_[s] > 0 ? model.transfer(s) : f;
    model.op_[static_cast<int>(OpKind::Offload)][s] = costs.get("Offload", s, copy);
    model.op_[static_cast<int>(OpKind::Reload)][s] = costs.get("Reload", s, copy);
    model.evictTransfer_[s] = costs.get("Evict", s, link);
    model.loadTransfer_[s] = costs.get("Load", s, link);
    bool anySubOp = false;
    for (int direction = 0; direction < 2; ++direction)
      for (int k = 0; k < kSubOps; ++k) {
        model.subOps_[s][direction][k] = costs.get(kSubOpNames[direction][k], s, 0);
        anySubOp |= costs.given(kSubOpNames[direction][k], s);
      }
    model.hasSubOps_[s] = anySubOp;
    // At least 1 is refused by the cost checks (CommSmShareOutOfRange); kept
    // below 1 here so that a plan never divides by a zero speed.
    model.commSmShare_[s] = std::clamp(costs.get("comm_sm_share", s, 0), 0.0, 0.99);
  }
  return model;
}

double CostModel::pair(int64_t forwardStage, OpKind backwardKind, int64_t backwardStage) const {
  if (fb_[forwardStage] >= 0)
    return fb_[forwardStage];
  if (hasSubOps_[forwardStage] || hasSubOps_[backwardStage])
    return planOverlap(*this, forwardStage, backwardStage).makespan;
  return op(OpKind::F, forwardStage) + op(backwardKind, backwardStage); // no overlap gain
}

double CostModel::transfer(int64_t stage) const {
  double bytes = activationBytes_[stage], bandwidth = bandwidth_[stage];
  return latency_[stage] + (bandwidth > 0 && bytes > 0 ? bytes / bandwidth : 0);
}

} // namespace pipec
