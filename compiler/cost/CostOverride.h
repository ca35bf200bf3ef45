// One cost setting as given by the user, before resolution (CostResolution.h).
#pragma once

#include "llvm/Support/SMLoc.h"

#include <cstdint>
#include <string>
#include <utility>

namespace pipec {

// Where a setting came from, in increasing precedence: a later source beats an
// earlier one for every stage it names.
enum class CostSource : uint8_t { Schedule, File, Flag };

struct CostOverride {
  CostOverride() = default;
  CostOverride(std::string name, int64_t stage, double value,
               CostSource source = CostSource::Flag)
      : name(std::move(name)), stage(stage), value(value), source(source) {}

  std::string name;
  int64_t stage = -1; // -1: every stage
  double value = 0;
  CostSource source = CostSource::Flag;
  std::string origin;   // for messages: "--cost 'F=2'", "--costs 'c.json'"; empty in the schedule
  llvm::SMRange range;  // where a schedule's setting is written; empty otherwise
};

} // namespace pipec
