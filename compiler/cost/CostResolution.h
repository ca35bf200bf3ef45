// Which setting decides each cost of each stage. The rule, for every cost name:
//  - a later source beats an earlier one: defaults < the schedule's `costs { }`
//    block < `--costs FILE.json` < `--cost NAME=V`, whatever each one says;
//  - within one source, a per-stage value (`F[0] = 2`) beats a whole-schedule
//    value (`F = 1`), whichever is written first;
//  - otherwise the last one written wins.
// Settings for a stage that does not exist decide nothing (checkCosts reports them).
#pragma once

#include "cost/CostOverride.h"
#include "elab/ScheduleIR.h"

#include "llvm/ADT/StringRef.h"

#include <vector>

namespace pipec {

class ResolvedCosts {
public:
  // The schedule's settings first, then `overrides` in order.
  ResolvedCosts(const ScheduleIR &ir, const std::vector<CostOverride> &overrides);

  // The setting that decides `name` for `stage`; null when none does (the default).
  const CostOverride *decider(llvm::StringRef name, int64_t stage) const;
  bool given(llvm::StringRef name, int64_t stage) const { return decider(name, stage); }
  double get(llvm::StringRef name, int64_t stage, double fallback) const {
    const CostOverride *d = decider(name, stage);
    return d ? d->value : fallback;
  }
  int64_t stages() const { return stages_; }
  const std::vector<CostOverride> &settings() const { return settings_; }

private:
  int64_t stages_;
  std::vector<CostOverride> settings_;
  std::vector<std::vector<int32_t>> decider_; // [name index][stage] -> settings_ index, -1: none
};

} // namespace pipec
