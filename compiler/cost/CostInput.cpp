#include "cost/CostInput.h"

#include "support/InputFile.h"
#include "syntax/CostNames.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
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

// The deepest nesting of JSON arrays and objects in `text`, or `limit` + 1 once
// past it. LLVM's JSON parser recurses once per level, so a file of a million
// '[' would exhaust the stack before it could be called malformed.
size_t jsonNesting(llvm::StringRef text, size_t limit) {
  size_t depth = 0, deepest = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size() && deepest <= limit; ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i; // the escaped character cannot end the string
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
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
  std::unique_ptr<llvm::MemoryBuffer> buffer = readInputFile(path, error);
  if (!buffer) {
    error = "cannot read '" + path + "': " + error;
    return std::nullopt;
  }
  return parseCostsJson(buffer->getBuffer(), path, error);
}

std::optional<std::vector<CostOverride>> parseCostsJson(llvm::StringRef text,
                                                        const std::string &path,
                                                        std::string &error) {
  // One object of numbers is two levels at most; far deeper is refused unparsed.
  constexpr size_t kMaxNesting = 64;
  if (jsonNesting(text, kMaxNesting) > kMaxNesting) {
    error = "'" + path + "' nests arrays or objects more than " + std::to_string(kMaxNesting) +
            " deep; it must hold one JSON object of cost names to numbers";
    return std::nullopt;
  }
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
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
