// Reading costs from the command line: `--cost NAME[STAGE]=V` and `--costs FILE.json`.
// Both reject unknown names, negative, non-finite and malformed values; -0 is 0.
#pragma once

#include "cost/CostOverride.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace pipec {

// Parses `NAME=VALUE` or `NAME[STAGE]=VALUE`; nullopt (with `error` set) if malformed.
std::optional<CostOverride> parseCostOverride(llvm::StringRef text, std::string &error);
// Reads a JSON object of "NAME" or "NAME[STAGE]" to numbers, keeping each number
// exactly as JSON gives it.
// The file is read as pipec reads any input (InputFile.h: "-" is standard input,
// and the size is capped).
std::optional<std::vector<CostOverride>> readCostsFile(const std::string &path, std::string &error);
// The same, from text already read; `path` names it in messages.
std::optional<std::vector<CostOverride>> parseCostsJson(llvm::StringRef text,
                                                        const std::string &path,
                                                        std::string &error);
// Whether `name` is a cost the model knows.
bool isKnownCost(llvm::StringRef name);

} // namespace pipec
