// `pipec plan`'s search over the whole layout: for every candidate schedule and
// every tensor-, context-, pipeline-, data- and expert-parallel size, chunk
// count v, micro-batch size, recomputation and ZeRO stage (Enumerate.h) that
// its `require`s and checks accept, the costs in seconds and bytes
// (StageCosts.h), one simulation by the simulator itself, the memory per GPU
// from the memory check's peak activations; then the ranking among those that
// fit. Pruning, each step sound:
//  - a size over --max-ops is refused from its op count before elaborating;
//  - a layout whose parameters, gradients and optimizer state alone (their mean
//    over the ranks, which no placement lowers) exceed the GPU is never compiled
//    while anything else may fit;
//  - each schedule file is compiled once per (P, M, v) (ScheduleCache.h), the
//    ops held by compilations in flight and cached bounded together by the
//    cache's working budget (threads wait rather than go past it);
//  - a fitting layout whose step-time lower bound (the busiest rank's lone ops
//    plus the tail) exceeds both the `keep`-th best step found and its own
//    schedule's best is not simulated: the listed rows, the winner and each
//    schedule's best (the runner-up) are exact;
//  - the whole search stops at a time budget, best layouts first, and says so:
//    the time is checked before each compilation (one that cannot end in the
//    time left at the cache's measured rate is not started), each point costed
//    and each simulation; what was left is counted as not reached.
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

class ScheduleCache;
struct CompiledSchedule;

// What fitting candidates are ranked by. One place: the table, the winner and
// the pruning read it. (Step-time percentiles under variation plug in here.)
enum class RankBy { StepTime };

// What the search varies, and how long it may take.
struct SearchOptions {
  // Values tried; empty: the Training's own value only.
  std::vector<int64_t> tensorParallel, contextParallel, microBatchSizes;
  std::vector<Recompute> recompute;
  std::vector<int> zeroStages;
  size_t keep = 20;             // candidates ranked exactly; 0: simulate every fitting one
  double timeBudgetSeconds = 0; // the whole plan, remedies included; 0: no limit
  RankBy rankBy = RankBy::StepTime;
  // When nothing fits: simulate the `keep` points that need least memory, to
  // show them (plan's table); false: return no candidate (a remedy's re-plan).
  bool listUnfitting = true;
  // Where the training fixes no split (no layout, no first/last stage
  // layers), each layout's first and last stage take the layer counts that
  // balance its stages (balancedStageEnds); the candidate's training says
  // which. false: the even split.
  bool balanceStages = false;
};

struct PlanInputs {
  ModelConfig config;
  ModelLayers model;
  Cluster cluster;    // cluster.gpus: the GPUs to plan for
  Training training;
  std::vector<std::string> schedules; // .pipe files
  std::optional<int64_t> expertParallel; // only this ep; nullopt: every one that divides
  ElabLimits limits;
  unsigned threads = 0; // 0: the hardware's
  SearchOptions search;
};

struct Candidate {
  std::string schedule;      // the file
  std::string name;          // the schedule's name
  std::vector<std::pair<std::string, int64_t>> params; // as bound, declaration order
  ParallelSizes layout;
  Training training;         // as costed: t, b, recomputation and ZeRO of this layout
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
  StepParts parts;           // the busiest rank's step: compute, TP, CP, EP, PP, DP, optimizer
  bool fits = false;
};

struct PlanResult {
  // Fitting candidates by the ranking; when none fits, the `keep` that need
  // least memory, by memory.
  std::vector<Candidate> candidates;
  std::optional<size_t> recommended; // index of the winner; none when nothing fits
  size_t refused = 0;       // layouts a schedule's requires or checks refused
  size_t layouts = 0;       // layouts the search covers (every dimension)
  size_t overOps = 0;       // refused before elaborating: at least 2 S M ops > --max-ops
  size_t cannotFit = 0;     // not compiled: parameters and optimizer state alone overflow
  size_t notFitting = 0;    // costed exactly and over the GPU's memory
  size_t pruned = 0;        // fit, but their lower bound loses to the kept ones
  size_t nonFinite = 0;     // costs or results not finite (absurd cluster numbers)
  size_t notReached = 0;    // left when the time budget ran out
  size_t compilations = 0;  // schedule elaborations this plan ran (the cache's)
  bool timedOut = false;
  std::vector<std::string> errors; // schedules that could not be compiled at all
};

// The value candidates are ranked by (smaller is better).
double rankValue(const Candidate &c, RankBy by);

// The GPUs the inputs mean: the cluster's (set from --gpus). `cache` may be
// shared by several plans (remedies, re-plans); null: a cache of its own.
PlanResult makePlan(const PlanInputs &inputs, ScheduleCache *cache = nullptr);

// One candidate of an already compiled schedule at `layout` under `training`:
// costed and simulated once. nullopt with `error` set when the layout does not
// suit the model or its numbers are not finite.
std::optional<Candidate> evaluateCompiled(const PlanInputs &inputs, const CompiledSchedule &c,
                                          const std::string &file, const ParallelSizes &layout,
                                          const Training &training, std::string &error);

// The Training of a layout: the inputs' with its t, b (and cp).
Training trainingFor(const Training &base, const ParallelSizes &layout);

// The layers of model.layers (embedding first, head last) each of `stages`
// stages holds: transformer layers split as evenly as possible, the spare ones
// to the stages after the first, which already holds the embedding
// (stageLayerRanges' even split); empty when a stage would hold none.
std::vector<std::pair<size_t, size_t>> splitLayers(const ModelLayers &model, int64_t stages);

// What would make something fit when nothing does: each change re-planned
// (only dimensions the search did not already vary), sharing `cache`.
struct Remedy {
  std::string change;        // "--gpus 32", "--recompute full", ...
  std::optional<Candidate> best;
};
std::vector<Remedy> findRemedies(const PlanInputs &inputs, ScheduleCache *cache = nullptr);

} // namespace pipec::plan
