// What `pipec sim` prints about variability, stragglers and contention: the
// settings, the step time's distribution (mean, p50, p90, p99), each rank's
// idle time's, and the per-rank sensitivity, in text and as JSON attributes of
// sim's document ("step_time", "idle_by_rank", "variability", "sensitivity").
#pragma once

#include "sim/Variability.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pipec {

struct VariabilityReport {
  std::string jitter;  // JitterSpec::describe(); "none" without --jitter
  size_t samples = 0;
  uint64_t seed = 0;
  std::vector<std::pair<int64_t, double>> slow; // --slow RANK=FACTOR
  std::string topology;                         // Topology::describe(); "" without contention
  double quietStepTime = 0;                     // no straggler, no contention, no jitter
  double stepTime = 0;                          // stragglers and contention, no jitter
  std::optional<VariabilityResult> jittered;
  std::vector<RankSensitivity> sensitivity;     // by rank; empty without --sensitivity
  double sensitivityFactor = 1.1;
  double tail = 0; // seconds after the pipeline (sim --model: gradient reductions), in every step time
  bool tailShared = false; // the tail ran on the NICs, sharing them with pipeline messages
};

// Adds `tail` to every step time of the report (not to idle times or growths).
void addStepTail(VariabilityReport &report, double tail);

// Whether every number the report would print is finite: a jitter CV or a
// straggler factor near the largest double overflows the samples' sums (or
// their squares, in the deviation), and bare inf/nan is not JSON.
bool isFinite(const VariabilityReport &report);

// The ranks named as most sensitive: the three that grow the step most, when they grow it.
std::vector<RankSensitivity> namedSensitiveRanks(const VariabilityReport &report);

void printVariabilityText(const VariabilityReport &report, llvm::raw_ostream &out);
// Attributes of sim's JSON document, in this order: "idle_by_rank", "sensitivity",
// "step_time", "variability" (only those that apply).
void writeVariabilityJson(const VariabilityReport &report, llvm::json::OStream &j);

} // namespace pipec
