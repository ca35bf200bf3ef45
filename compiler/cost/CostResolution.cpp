#include "cost/CostResolution.h"

#include "syntax/CostNames.h"

#include "llvm/ADT/STLExtras.h"

namespace pipec {

namespace {

int nameIndex(llvm::StringRef name) {
  llvm::ArrayRef<llvm::StringRef> names = costNames();
  auto it = llvm::find(names, name);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}

// A setting's precedence: its source first, then per-stage over whole-schedule.
// Among equals the later one wins.
int precedence(const CostOverride &c) { return static_cast<int>(c.source) * 2 + (c.stage >= 0); }

} // namespace

ResolvedCosts::ResolvedCosts(const ScheduleIR &ir, const std::vector<CostOverride> &overrides)
    : stages_(ir.numStages) {
  for (const CostSetting &c : ir.costs) {
    CostOverride setting{c.name, c.stage, c.value, CostSource::Schedule};
    if (c.origin)
      setting.range = c.origin->range;
    settings_.push_back(std::move(setting));
  }
  settings_.insert(settings_.end(), overrides.begin(), overrides.end());

  decider_.assign(costNames().size(), std::vector<int32_t>(stages_, -1));
  for (size_t i = 0; i < settings_.size(); ++i) {
    const CostOverride &c = settings_[i];
    int name = nameIndex(c.name);
    if (name < 0 || c.stage >= stages_)
      continue;
    int64_t first = c.stage < 0 ? 0 : c.stage, last = c.stage < 0 ? stages_ : c.stage + 1;
    for (int64_t s = first; s < last; ++s) {
      int32_t &d = decider_[name][s];
      if (d < 0 || precedence(c) >= precedence(settings_[d]))
        d = static_cast<int32_t>(i);
    }
  }
}

const CostOverride *ResolvedCosts::decider(llvm::StringRef name, int64_t stage) const {
  int index = nameIndex(name);
  if (index < 0 || stage < 0 || stage >= stages_)
    return nullptr;
  int32_t d = decider_[index][stage];
  return d < 0 ? nullptr : &settings_[d];
}

} // namespace pipec
