#include "plan/JsonFields.h"

#include "diag/Diagnostics.h"
#include "support/InputFile.h"

#include <cmath>

namespace pipec::plan {

const llvm::json::Value *JsonFields::get(llvm::StringRef key) const {
  const llvm::json::Value *value = object_.get(key);
  return value && value->kind() != llvm::json::Value::Null ? value : nullptr;
}

bool JsonFields::has(llvm::StringRef key) const { return get(key) != nullptr; }

// The field to read, or null: after an earlier failure, or when it is absent
// (a failure too when the field is required).
const llvm::json::Value *JsonFields::field(llvm::StringRef key, bool required) {
  if (failed_)
    return nullptr;
  const llvm::json::Value *value = get(key);
  if (!value && required)
    fail(key, "is missing");
  return value;
}

void JsonFields::fail(llvm::StringRef key, const std::string &problem) {
  if (failed_)
    return;
  failed_ = true;
  error_ = file_ + ": field '" + prefix_ + key.str() + "' " + problem;
}

int64_t JsonFields::integer(llvm::StringRef key, int64_t min, int64_t max,
                            std::optional<int64_t> fallback) {
  const llvm::json::Value *value = field(key, !fallback);
  if (!value)
    return fallback.value_or(min);
  auto number = value->getAsNumber();
  auto whole = value->getAsInteger();
  if (!number) {
    fail(key, "must be an integer");
  } else if (!std::isfinite(*number)) {
    fail(key, "is not a finite number");
  } else if (!whole) {
    fail(key, "must be an integer, got " + diagArg(*number));
  } else if (*whole < min || *whole > max) {
    fail(key, "is " + std::to_string(*whole) + ", expected " + std::to_string(min) + " to " +
                  std::to_string(max));
  } else {
    return *whole;
  }
  return fallback.value_or(min);
}

double JsonFields::number(llvm::StringRef key, double min, double max,
                          std::optional<double> fallback, bool minExclusive) {
  const llvm::json::Value *value = field(key, !fallback);
  if (!value)
    return fallback.value_or(min);
  auto number = value->getAsNumber();
  // A value in a message as diagnostics write it: the shortest text that reads back the same.
  auto show = [](double v) { return diagArg(v); };
  if (!number)
    fail(key, "must be a number");
  else if (!std::isfinite(*number))
    fail(key, "is not a finite number");
  else if (*number < min || (minExclusive && *number == min) || *number > max)
    fail(key, "is " + show(*number) + ", expected " + (minExclusive ? "above " : "") + show(min) +
                  " to " + show(max));
  else
    return *number;
  return fallback.value_or(min);
}

bool JsonFields::boolean(llvm::StringRef key, bool fallback) {
  if (failed_)
    return fallback;
  const llvm::json::Value *value = get(key);
  if (!value)
    return fallback;
  if (auto b = value->getAsBoolean())
    return *b;
  fail(key, "must be true or false");
  return fallback;
}

std::string JsonFields::string(llvm::StringRef key, std::optional<std::string> fallback) {
  const llvm::json::Value *value = field(key, !fallback);
  if (!value)
    return fallback.value_or("");
  if (auto s = value->getAsString())
    return s->str();
  fail(key, "must be a string");
  return fallback.value_or("");
}

namespace {

// The deepest nesting of arrays and objects in `text`, outside strings. The
// JSON parser recurses per level, so a file of a million '[' would exhaust the
// stack; no configuration nests more than a few levels.
constexpr int kMaxJsonDepth = 64;

bool nestedTooDeep(llvm::StringRef text) {
  int depth = 0;
  bool inString = false, escaped = false;
  for (char c : text) {
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

} // namespace

std::optional<llvm::json::Object> parseJsonObject(llvm::StringRef text, llvm::StringRef name,
                                                  std::string &error) {
  if (nestedTooDeep(text)) {
    error = name.str() + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
    return std::nullopt;
  }
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json) {
    error = name.str() + ": not valid JSON: " + llvm::toString(json.takeError());
    return std::nullopt;
  }
  llvm::json::Object *object = json->getAsObject();
  if (!object) {
    error = name.str() + ": expected one JSON object";
    return std::nullopt;
  }
  return std::move(*object);
}

std::optional<std::string> readTextFile(llvm::StringRef path, std::string &error) {
  std::unique_ptr<llvm::MemoryBuffer> buffer = readInputFile(path, error);
  if (!buffer) {
    error = "cannot read '" + path.str() + "': " + error;
    return std::nullopt;
  }
  return buffer->getBuffer().str();
}

} // namespace pipec::plan
