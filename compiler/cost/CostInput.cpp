#include "cost/CostInput.h"

#include "syntax/CostNames.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>

namespace pipec {

bool isKnownCost(llvm::StringRef name) { return llvm::is_contained(costNames(), name); }

namespace {

// Splits `NAME` or `NAME[STAGE]` and checks the name; `text` is for messages.
bool parseCostKey(llvm::StringRef key, llvm::StringRef text, CostOverride &result,
                  std::string &error) {
  llvm::StringRef name = key.trim();
  if (name.endswith("]")) {
    auto [base, index] = name.drop_back().split('[');
    long long stage;
    if (index.getAsInteger(10, stage) || stage < 0) {
      error = "expected NAME[STAGE]=VALUE with a stage number, got '" + text.str() + "'";
      return false;
    }
    name = base;
    result.stage = stage;
  }
  if (!isKnownCost(name)) {
    error = "unknown cost '" + name.str() + "' in '" + text.str() + "'";
    return false;
  }
  result.name = name.str();
  return true;
}

enum class ValueProblem { None, NonFinite, Negative };

// Checks a value: finite and at least 0; -0 becomes 0.
ValueProblem checkCostValue(double &value) {
  if (!std::isfinite(value))
    return ValueProblem::NonFinite;
  if (value < 0)
    return ValueProblem::Negative;
  value += 0.0; // -0 + 0 is +0
  return ValueProblem::None;
}

} // namespace

std::optional<CostOverride> parseCostOverride(llvm::StringRef text, std::string &error) {
  auto [key, value] = text.split('=');
  CostOverride result;
  result.source = CostSource::Flag;
  result.origin = "--cost '" + text.str() + "'";
  if (!parseCostKey(key, text, result, error))
    return std::nullopt;
  // getAsDouble accepts "inf", "nan" and overflowing literals; checkCostValue refuses them.
  if (value.trim().getAsDouble(result.value)) {
    error = "expected a number of at least 0 in '" + text.str() + "'";
    return std::nullopt;
  }
  switch (checkCostValue(result.value)) {
  case ValueProblem::None:
    return result;
  case ValueProblem::NonFinite:
    error = "'" + text.str() + "' is not a finite number; costs must be finite";
    return std::nullopt;
  case ValueProblem::Negative:
    error = "expected a number of at least 0 in '" + text.str() + "'";
    return std::nullopt;
  }
  return std::nullopt;
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
    CostOverride cost;
    cost.source = CostSource::File;
    cost.origin = "--costs '" + path + "'";
    cost.value = *number; // the double itself: printing and re-parsing it loses digits
    if (!parseCostKey(key, key, cost, error)) {
      error = "in '" + path + "': " + error;
      return std::nullopt;
    }
    ValueProblem problem = checkCostValue(cost.value);
    if (problem != ValueProblem::None) {
      error = "in '" + path + "': the value of \"" + key + "\" is " +
              (problem == ValueProblem::NonFinite ? "not a finite number; costs must be finite"
                                                  : "below 0");
      return std::nullopt;
    }
    costs.push_back(std::move(cost));
  }
  return costs;
}

} // namespace pipec
