// `pipec plan`'s search: for every candidate schedule and every parallel layout
// (Enumerate.h) that its `require`s and checks accept, the costs in seconds and
// bytes (StageCosts.h), one simulation by the simulator itself, the memory per
// GPU from the memory check's peak activations; then the ranking by step time
// among the candidates that fit.
#pragma once

#include "elab/Elaborator.h"
#include "plan/Cluster.h"
#include "plan/Enumerate.h"
#include "plan/ModelConfig.h"
#include "plan/StageCosts.h"
#include "plan/Training.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pipec::plan {

struct PlanInputs {
  ModelConfig config;
  ModelLayers model;
  Cluster cluster;    // cluster.gpus: the GPUs to plan for
  Training training;
  std::vector<std::string> schedules; // .pipe files
  std::optional<int64_t> expertParallel; // only this ep; nullopt: every one that divides
  ElabLimits limits;
  unsigned threads = 0; // 0: the hardware's
};

struct Candidate {
  std::string schedule;      // the file
  std::string name;          // the schedule's name
  std::vector<std::pair<std::string, int64_t>> params; // as bound, declaration order
  ParallelSizes layout;
  int64_t copies = 1;        // parameter copies of each stage
  double stagesPerRank = 1;  // v as the simulator's normalisation sees it
  PlanCosts costs;           // per stage, in seconds and bytes
  double makespan = 0;       // the simulated pipeline, seconds
  double tailSeconds = 0;    // gradient reductions after it
  double stepTime = 0;       // makespan + tail
  double bubbleFraction = 0; // mean idle time per rank / makespan
  double mfu = 0;            // model FLOPs (no recomputation) / (step time x GPUs x peak)
  double tokensPerSecond = 0;
  double gpuHoursPerMillionTokens = 0;
  MemoryBreakdown memory;    // the rank that needs most
  bool fits = false;
};

struct PlanResult {
  // Fitting candidates by step time, then those that do not fit by memory.
  std::vector<Candidate> candidates;
  std::optional<size_t> recommended; // index of the winner; none when nothing fits
  size_t refused = 0;                // layouts a schedule's requires or checks refused
  std::vector<std::string> errors;   // schedules that could not be compiled at all
};

// The GPUs the inputs mean: the cluster's (set from --gpus).
PlanResult makePlan(const PlanInputs &inputs);

// One candidate of `file` at `layout`: compiled, costed and simulated once.
// nullopt with `error` set when the schedule refuses the layout.
std::optional<Candidate> evaluateCandidate(const PlanInputs &inputs, const std::string &file,
                                           const ParallelSizes &layout, std::string &error);

// The layers of model.layers (embedding first, head last) each of `stages`
// stages holds: transformer layers split as evenly as possible, the spare ones
// to the stages after the first, which already holds the embedding.
std::vector<std::pair<size_t, size_t>> splitLayers(const ModelLayers &model, int64_t stages);

// What would make something fit when nothing does: each change re-planned.
struct Remedy {
  std::string change;        // "--gpus 32", "--recompute full", ...
  std::optional<Candidate> best;
};
std::vector<Remedy> findRemedies(const PlanInputs &inputs);

} // namespace pipec::plan
