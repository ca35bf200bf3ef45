// Reading typed fields from a JSON object with errors that name the file and
// the field: shared by the model, cluster and training readers. The first
// problem is kept; later reads are no-ops, so a reader can read every field
// and check `ok()` once.
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace pipec::plan {

class JsonFields {
public:
  // `prefix` names a nested object's fields in messages ("outer.inner.").
  JsonFields(const llvm::json::Object &object, llvm::StringRef file, std::string &error,
             llvm::StringRef prefix = "")
      : object_(object), file_(file.str()), prefix_(prefix.str()), error_(error) {}

  bool ok() const { return !failed_; }
  bool has(llvm::StringRef key) const; // present and not null
  // An integer in [min, max]; `fallback` when absent or null (an error when there is none).
  int64_t integer(llvm::StringRef key, int64_t min, int64_t max,
                  std::optional<int64_t> fallback = std::nullopt);
  // A finite number in [min, max] (min exclusive when `minExclusive`).
  double number(llvm::StringRef key, double min, double max, std::optional<double> fallback,
                bool minExclusive = false);
  bool boolean(llvm::StringRef key, bool fallback);
  std::string string(llvm::StringRef key, std::optional<std::string> fallback = std::nullopt);
  // Reports a problem with `key` (the first one wins).
  void fail(llvm::StringRef key, const std::string &problem);

private:
  const llvm::json::Value *get(llvm::StringRef key) const;
  const llvm::json::Value *field(llvm::StringRef key, bool required);
  const llvm::json::Object &object_;
  std::string file_;
  std::string prefix_;
  std::string &error_;
  bool failed_ = false;
};

// Parses `text` as one JSON object; nullopt with `error` ("NAME: not valid JSON: ...").
std::optional<llvm::json::Object> parseJsonObject(llvm::StringRef text, llvm::StringRef name,
                                                  std::string &error);
// Reads a file whole under the input size limit; empty optional with `error` on failure.
std::optional<std::string> readTextFile(llvm::StringRef path, std::string &error);

} // namespace pipec::plan
