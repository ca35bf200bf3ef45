#include "sim/CostModel.h"

#include "sim/OverlapPlan.h"
#include "syntax/CostNames.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

namespace pipec {

bool isKnownCost(llvm::StringRef name) { return llvm::is_contained(costNames(), name); }

std::optional<CostOverride> parseCostOverride(llvm::StringRef text, std::string &error) {
  auto [key, value] = text.split('=');
  CostOverride result;
  llvm::StringRef name = key.trim();
  if (name.endswith("]")) {
    auto [base, index] = name.drop_back().split('[');
    long long stage;
    if (index.getAsInteger(10, stage) || stage < 0) {
      error = "expected NAME[STAGE]=VALUE with a stage number, got '" + text.str() + "'";
      return std::nullopt;
    }
    name = base;
    result.stage = stage;
  }
  if (!isKnownCost(name)) {
    error = "unknown cost '" + name.str() + "' in '" + text.str() + "'";
    return std::nullopt;
  }
  double number;
  if (value.trim().getAsDouble(number) || number < 0) {
    error = "expected a number of at least 0 in '" + text.str() + "'";
    return std::nullopt;
  }
  result.name = name.str();
  result.value = number;
  return result;
}

std::optional<std::vector<CostOverride>> readCostsFile(const std::string &path, std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    error = "cannot read '" + path + "': " + buffer.getError().message();
    return std::nullopt;
  }
  llvm::Expected<llvm::json::Value> json = llvm::json::parse((*buffer)->getBuffer());
  if (!json) {
    error = "'" + path + "' is not valid JSON: " + llvm::toString(json.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *object = json->getAsObject();
  if (!object) {
    error = "'" + path + "' must hold one JSON object of cost names to numbers";
    return std::nullopt;
  }
  std::vector<std::string> keys;
  for (const auto &entry : *object)
    keys.push_back(entry.first.str());
  llvm::sort(keys); // deterministic: JSON objects are unordered
  std::vector<CostOverride> costs;
  for (const std::string &key : keys) {
    auto number = object->getNumber(key);
    if (!number) {
      error = "in '" + path + "': the value of \"" + key + "\" is not a number";
      return std::nullopt;
    }
    std::optional<CostOverride> cost =
        parseCostOverride(key + "=" + std::to_string(*number), error);
    if (!cost) {
      error = "in '" + path + "': " + error;
      return std::nullopt;
    }
    costs.push_back(*cost);
  }
  return costs;
}

namespace {

// One named setting resolved per stage: the last global value, overwritten for
// single stages by later per-stage values.
struct Setting {
  std::vector<double> value;
  std::vector<bool> given;
};

} // namespace

CostModel CostModel::build(const ScheduleIR &ir, const std::vector<CostOverride> &overrides) {
  std::vector<CostOverride> all;
  for (const CostSetting &c : ir.costs)
    all.push_back({c.name, c.stage, c.value});
  all.insert(all.end(), overrides.begin(), overrides.end());

  size_t stages = static_cast<size_t>(ir.numStages);
  llvm::StringMap<Setting> settings;
  for (const CostOverride &c : all) {
    Setting &s = settings[c.name];
    s.value.resize(stages, 0.0);
    s.given.resize(stages, false);
    if (c.stage < 0) {
      std::fill(s.value.begin(), s.value.end(), c.value);
      std::fill(s.given.begin(), s.given.end(), true);
    } else if (static_cast<size_t>(c.stage) < stages) {
      s.value[c.stage] = c.value;
      s.given[c.stage] = true;
    }
  }
  auto get = [&](llvm::StringRef name, size_t stage, double fallback) {
    auto it = settings.find(name);
    return it != settings.end() && it->second.given[stage] ? it->second.value[stage] : fallback;
  };
  auto given = [&](llvm::StringRef name, size_t stage) {
    auto it = settings.find(name);
    return it != settings.end() && it->second.given[stage];
  };

  CostModel model;
  for (auto &table : model.op_)
    table.resize(stages);
  model.fb_.resize(stages);
  model.activationBytes_.resize(stages);
  model.subOps_.resize(stages);
  model.hasSubOps_.resize(stages);
  static const char *kSubOpNames[2 * kSubOps] = {"attn_f",  "attn_b",  "dispatch_f", "dispatch_b",
                                                 "mlp_f",   "mlp_b",   "combine_f",  "combine_b"};
  for (size_t s = 0; s < stages; ++s) {
    double f = get("F", s, 1), b = get("B", s, 2), w = get("W", s, 1);
    model.op_[static_cast<int>(OpKind::F)][s] = f;
    model.op_[static_cast<int>(OpKind::B)][s] = b;
    model.op_[static_cast<int>(OpKind::W)][s] = w;
    model.op_[static_cast<int>(OpKind::I)][s] = get("I", s, std::max(0.0, b - w));
    model.fb_[s] = given("FB", s) ? get("FB", s, 0) : -1;
    model.activationBytes_[s] = get("activation_bytes", s, 0);
    bool anySubOp = false;
    for (int k = 0; k < 2 * kSubOps; ++k) {
      model.subOps_[s][k] = get(kSubOpNames[k], s, 0);
      anySubOp |= given(kSubOpNames[k], s);
    }
    model.hasSubOps_[s] = anySubOp;
  }
  model.latency_ = stages ? get("p2p", 0, 0) : 0;
  model.bandwidth_ = stages ? get("bandwidth", 0, 0) : 0;
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
  double bytes = activationBytes_[stage];
  return latency_ + (bandwidth_ > 0 && bytes > 0 ? bytes / bandwidth_ : 0);
}

} // namespace pipec
