#include "plan/Planner.h"
#include "plan/EpOverlap.h"
#include "plan/LayerTimes.h"

#include "plan/ScheduleCache.h"
#include "plan/StageLayout.h"
#include "sim/Simulator.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <system_error>
#include <tuple>
#include <thread>

namespace pipec::plan {

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();

// Groups evaluated between two updates of the pruning threshold. Fixed, so the
// candidates simulated do not depend on the thread count.
constexpr size_t kBatch = 16;
// A layout is left uncompiled when its parameters, gradients and optimizer
// state, averaged over the ranks, exceed the GPU by this margin: the average is
// what any placement of the same stages must hold, up to the few terms that
// depend on where stages sit (a tied head stored once on a shared rank).
constexpr double kStaticMargin = 1.05;

bool has(const std::vector<std::string> &names, const char *name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Where each stage's weights live: its first flow's rank, and another flow's
// rank when the schedule keeps a second copy there (DualPipe, Chimera).
void placeStages(const ScheduleIR &ir, ParallelLayout &layout) {
  size_t stages = size_t(ir.numStages);
  layout.stageRank.assign(stages, 0);
  layout.stageCopyRank.assign(stages, -1);
  for (size_t f = 0; f < ir.flows.size(); ++f)
    for (size_t s = 0; s < stages && s < ir.flows[f].stageSlots.size(); ++s) {
      int64_t rank = ir.flows[f].stageSlots[s].rank;
      if (f == 0)
        layout.stageRank[s] = rank;
      else if (rank != layout.stageRank[s])
        layout.stageCopyRank[s] = rank;
    }
}

ParallelLayout baseLayout(const ParallelSizes &sizes) {
  ParallelLayout parallel;
  parallel.pipelineRanks = sizes.pp;
  parallel.dataParallel = sizes.dp;
  parallel.expertParallel = sizes.ep;
  parallel.microbatches = sizes.microbatches;
  return parallel;
}

// The training a layout is costed with, its stages run by `stageRanks`:
// under SearchOptions::balanceStages and a training that fixes no split,
// with the first and last stage sizes that balance the ranks' work, each
// layer weighed by its kind's forward and backward computation in seconds (a
// large vocabulary's head is memory-bound as much as it is matmuls).
Training withStageSplit(const PlanInputs &inputs, const Training &training, int64_t expertParallel,
                        const std::vector<std::vector<int64_t>> &stageRanks) {
  if (!inputs.search.balanceStages || !training.pipelineLayout.empty() || training.firstStageLayers >= 0 ||
      training.lastStageLayers >= 0)
    return training;
  const std::array<LayerTime, 4> kinds = layerTimesByKind(inputs.config, inputs.cluster, training, expertParallel);
  std::array<double, 4> kindSeconds{};
  for (size_t k = 0; k < kinds.size(); ++k)
    kindSeconds[k] = layerComputeSeconds(kinds[k]);
  std::vector<double> work;
  work.reserve(inputs.model.layers.size());
  for (const LayerSpec &layer : inputs.model.layers)
    work.push_back(kindSeconds[size_t(layer.kind)]);
  Training split = training;
  std::tie(split.firstStageLayers, split.lastStageLayers) = balancedStageEnds(inputs.model, work, stageRanks);
  return split;
}

// The ranks that run each stage of a placed layout (its first flow's, and a
// copy's).
std::vector<std::vector<int64_t>> ranksOfStages(const ParallelLayout &layout) {
  std::vector<std::vector<int64_t>> ranks(layout.stageRank.size());
  for (size_t s = 0; s < ranks.size(); ++s) {
    ranks[s].push_back(layout.stageRank[s]);
    if (s < layout.stageCopyRank.size() && layout.stageCopyRank[s] >= 0)
      ranks[s].push_back(layout.stageCopyRank[s]);
  }
  return ranks;
}

// The layout as the compiled schedule places it (its stages' layers as the
// training's first/last stage sizes or layout string say, or as
// withStageSplit sizes the ends, which `training` then carries); nullopt with
// `error` when they do not split.
std::optional<ParallelLayout> compiledLayout(const PlanInputs &inputs, const CompiledSchedule &c,
                                             const ParallelSizes &sizes, Training &training,
                                             std::string &error) {
  const ScheduleIR &ir = c.ir();
  ParallelLayout parallel = baseLayout(sizes);
  parallel.chunksPerRank = ir.numStages / ir.numRanks;
  placeStages(ir, parallel);
  training = withStageSplit(inputs, training, sizes.ep, ranksOfStages(parallel));
  std::optional<std::vector<std::pair<size_t, size_t>>> ranges =
      stageLayerRanges(inputs.model, ir.numStages, training, error);
  if (!ranges)
    return std::nullopt;
  parallel.stageLayers = std::move(*ranges);
  for (const RankMemory &m : c.report().memory)
    parallel.peakActivations.push_back(double(m.peakActivations));
  parallel.activationPeaks = c.activationPeaks;
  return parallel;
}

// The same sizes before any schedule is compiled: stages dealt round-robin,
// one chunk each (or v), one live micro-batch, no copies. Its costs give a
// memory bound and an estimate to order the search by.
std::optional<ParallelLayout> sketchLayout(const PlanInputs &inputs, const ParallelSizes &sizes,
                                           const Training &training) {
  ParallelLayout parallel = baseLayout(sizes);
  parallel.chunksPerRank = sizes.v > 0 ? sizes.v : 1;
  int64_t stages = sizes.pp * parallel.chunksPerRank;
  // The training's split, not the balanced one costCandidate takes: the
  // memory bound reads the mean over the ranks, which no split changes, and
  // the estimate only orders the search.
  std::string error;
  std::optional<std::vector<std::pair<size_t, size_t>>> ranges =
      stageLayerRanges(inputs.model, stages, training, error);
  if (!ranges || ranges->empty())
    return std::nullopt;
  parallel.stageLayers = std::move(*ranges);
  for (int64_t s = 0; s < stages; ++s)
    parallel.stageRank.push_back(s % sizes.pp);
  parallel.peakActivations.assign(size_t(sizes.pp), 1.0);
  return parallel;
}

bool finite(double x) { return std::isfinite(x); }

bool costsFinite(const PlanCosts &costs) {
  for (const StageCost &s : costs.stages)
    if (!finite(s.F) || !finite(s.B) || !finite(s.I) || !finite(s.W) ||
        !finite(s.messageSeconds) || !finite(s.activationBytes) || !finite(s.forwardFlops))
      return false;
  for (const MemoryBreakdown &m : costs.rankMemory)
    if (!finite(m.total))
      return false;
  return finite(costs.tail.total());
}

bool resultsFinite(const Candidate &c) {
  const MemoryBreakdown &m = c.memory;
  for (double x : {c.makespan, c.tailSeconds, c.stepTime, c.bubbleFraction, c.mfu,
                   c.tokensPerSecond, c.gpuHoursPerMillionTokens, m.params, m.grads,
                   m.optimizer, m.activations, m.buffers, m.total})
    if (!finite(x))
      return false;
  return true;
}

// Costs and memory of one layout of a compiled schedule; no simulation yet.
std::optional<Candidate> costCandidate(const PlanInputs &inputs, const CompiledSchedule &c,
                                       const std::string &file, const ParallelSizes &sizes,
                                       const Training &given, std::string &error) {
  const ScheduleIR &ir = c.ir();
  Training training = given; // with the end stages compiledLayout sizes
  if (training.epCommOverlap && !epOverlapApplies(inputs.config, training, sizes.ep, error))
    return std::nullopt;
  int64_t transformerLayers = inputs.model.transformerLayers();
  // Each stage holds a layer: a transformer layer, or the embedding or head
  // alone (uneven stages, --first/last-stage-layers 0).
  if (ir.numStages > transformerLayers + 2) {
    error = std::to_string(ir.numStages) + " stages for " + std::to_string(transformerLayers) +
            " layers";
    return std::nullopt;
  }
  std::optional<ParallelLayout> parallel = compiledLayout(inputs, c, sizes, training, error);
  if (!parallel)
    return std::nullopt;
  std::optional<PlanCosts> costs = computeCosts(inputs.config, inputs.model, inputs.cluster,
                                                training, *parallel, error);
  if (!costs)
    return std::nullopt;
  if (!costsFinite(*costs)) {
    error = "non-finite";
    return std::nullopt;
  }
  Candidate candidate;
  candidate.costs = std::move(*costs);
  candidate.schedule = file;
  candidate.name = ir.name;
  candidate.params = ir.params;
  candidate.layout = sizes;
  candidate.training = training;
  candidate.copies = ir.copies;
  candidate.stagesPerRank = CostModel::stagesPerRank(ir);
  candidate.tailSeconds = candidate.costs.tail.total();
  for (const MemoryBreakdown &m : candidate.costs.rankMemory)
    if (m.total > candidate.memory.total)
      candidate.memory = m;
  double busiest = -1;
  for (const StepParts &p : candidate.costs.rankParts) {
    double busy = p.compute + p.tp + p.cp + p.ep + p.pp + p.dp + p.optimizer;
    if (busy > busiest)
      busiest = busy, candidate.parts = p;
  }
  candidate.fits = candidate.memory.total <= inputs.cluster.memoryBytes;
  return candidate;
}

// A lower bound on the step time: the busiest rank's lone ops (halves of
// overlap pairs counted as nothing) plus the tail.
double stepLowerBound(const CompiledSchedule &c, const Candidate &candidate) {
  double busiest = 0;
  for (const auto &stages : c.loneOps) {
    double busy = 0;
    for (const CompiledSchedule::StageOps &e : stages) {
      if (size_t(e.stage) >= candidate.costs.stages.size())
        break;
      const StageCost &cost = candidate.costs.stages[size_t(e.stage)];
      busy += e.count[0] * cost.F + e.count[1] * cost.B + e.count[2] * cost.I + e.count[3] * cost.W;
    }
    busiest = std::max(busiest, busy);
  }
  return busiest + candidate.tailSeconds;
}

// Simulations of one compiled schedule by their costs: points that differ only
// in what the pipeline does not see (the ZeRO stage changes the tail and the
// memory, not F, B, I, W or messages) share one simulation.
using SimulationMemo = std::map<std::vector<double>, std::pair<double, double>>;

// Simulates a costed candidate and fills in its step time and rates.
bool simulateCandidate(const PlanInputs &inputs, const CompiledSchedule &c, Candidate &candidate,
                       SimResult &sim, SimulationMemo *memo = nullptr) {
  std::vector<CostOverride> overrides = toCostOverrides(candidate.costs);
  std::vector<double> key;
  for (const CostOverride &o : overrides)
    key.push_back(o.value);
  double makespan, bubble;
  auto known = memo ? memo->find(key) : SimulationMemo::iterator();
  if (memo && known != memo->end()) {
    std::tie(makespan, bubble) = known->second;
  } else {
    simulate(c.plan, CostModel::build(c.ir(), overrides), sim);
    size_t ranks = sim.ranks.size();
    makespan = sim.makespan;
    bubble = sim.makespan > 0 && ranks ? sim.totalBubble() / double(ranks) / sim.makespan : 0;
    if (memo)
      memo->emplace(std::move(key), std::make_pair(makespan, bubble));
  }
  candidate.makespan = makespan;
  candidate.bubbleFraction = bubble;
  candidate.stepTime = makespan + candidate.tailSeconds;
  const ParallelSizes &layout = candidate.layout;
  const Training &t = candidate.training;
  double gpus = double(layout.gpus());
  double tokens = double(t.globalBatch) * double(t.sequenceLength);
  double modelFlops = 0; // forward + backward (x3) of every micro-batch, no recomputation
  for (const StageCost &stage : candidate.costs.stages)
    modelFlops += 3 * stage.forwardFlops * double(layout.tp) * double(layout.cp);
  modelFlops *= double(layout.dp) * double(layout.microbatches);
  if (candidate.stepTime > 0) {
    candidate.mfu = modelFlops / (candidate.stepTime * gpus * inputs.cluster.peakFlops);
    candidate.tokensPerSecond = tokens / candidate.stepTime;
    candidate.gpuHoursPerMillionTokens = gpus * candidate.stepTime / 3600 / (tokens / 1e6);
  }
  return resultsFinite(candidate);
}

bool ranksBefore(const Candidate &a, const Candidate &b, RankBy by) {
  if (a.fits != b.fits)
    return a.fits;
  double ka = a.fits ? rankValue(a, by) : a.memory.total;
  double kb = b.fits ? rankValue(b, by) : b.memory.total;
  if (ka != kb)
    return ka < kb;
  // Equally fast: the one that leaves more memory free (ZeRO stages often tie).
  if (a.fits && a.memory.total != b.memory.total)
    return a.memory.total < b.memory.total;
  if (a.schedule != b.schedule)
    return a.schedule < b.schedule;
  const ParallelSizes &x = a.layout, &y = b.layout;
  return std::make_tuple(x.pp, x.v, x.ep, x.tp, x.cp, x.mbs, int(a.training.recompute),
                         a.training.zeroStage) <
         std::make_tuple(y.pp, y.v, y.ep, y.tp, y.cp, y.mbs, int(b.training.recompute),
                         b.training.zeroStage);
}

// One point of the search before any schedule is compiled.
struct Variant {
  size_t file;
  ParallelSizes sizes;
  Training training;
  double staticBound = 0; // mean parameters + gradients + optimizer per GPU
  double estimate = kInf; // step time of the sketch, to order the search by
};

// The variants of one (schedule, P, M, v): they share one compilation.
struct Group {
  size_t file;
  int64_t P, M, v;
  uint64_t minimumOps; // 2 S M: no schedule of these sizes has fewer
  std::vector<size_t> variants;
  double order = kInf;
};

// The ops a group's compilation is expected to hold, for the cache's working
// budget: 3 S M (F, B and W of every micro-batch on every stage, a zero-bubble
// schedule's count), saturating.
uint64_t expectedOps(const Group &g) {
  return g.minimumOps > UINT64_MAX / 3 ? UINT64_MAX : g.minimumOps / 2 * 3;
}

// What evaluating one group gave.
struct GroupResult {
  std::vector<Candidate> simulated;
  std::vector<std::pair<size_t, double>> unfitting; // variant, memory per GPU
  size_t refused = 0, pruned = 0, nonFinite = 0, notReached = 0, overMemory = 0;
};

void runPool(unsigned threads, const std::function<void()> &work) {
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error &) {
      break; // the machine gives no more threads: the ones running share the work
    }
  }
  work();
  for (std::thread &thread : pool)
    thread.join();
}

unsigned threadCount(const PlanInputs &inputs, size_t jobs) {
  unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  unsigned threads = inputs.threads ? std::min(inputs.threads, hardware) : hardware;
  return unsigned(std::min<size_t>(threads, std::max<size_t>(1, jobs)));
}

std::vector<int64_t> orDefault(const std::vector<int64_t> &values, int64_t fallback) {
  return values.empty() ? std::vector<int64_t>{fallback} : values;
}

} // namespace

double rankValue(const Candidate &c, RankBy by) {
  switch (by) {
  case RankBy::StepTime:
    return c.stepTime;
  }
  return c.stepTime;
}

Training trainingFor(const Training &base, const ParallelSizes &layout) {
  Training t = base;
  t.tensorParallel = layout.tp;
  t.contextParallel = layout.cp;
  t.microBatch = layout.mbs;
  return t;
}

std::vector<std::pair<size_t, size_t>> splitLayers(const ModelLayers &model, int64_t stages) {
  std::string unused;
  auto ranges = stageLayerRanges(model, stages, Training{}, unused); // the even split
  return ranges ? std::move(*ranges) : std::vector<std::pair<size_t, size_t>>{};
}

std::optional<Candidate> evaluateCompiled(const PlanInputs &inputs, const CompiledSchedule &c,
                                          const std::string &file, const ParallelSizes &layout,
                                          const Training &training, std::string &error) {
  std::optional<Candidate> candidate = costCandidate(inputs, c, file, layout, training, error);
  if (!candidate)
    return std::nullopt;
  SimResult sim;
  if (!simulateCandidate(inputs, c, *candidate, sim)) {
    error = "non-finite";
    return std::nullopt;
  }
  return candidate;
}

namespace {
PlanResult planSchedules(const PlanInputs &inputs, ScheduleCache *sharedCache);
} // namespace

// Under ep_comm_overlap each schedule runs as its overlap form
// (EpOverlap.h); one without a form is reported, not searched.
PlanResult makePlan(const PlanInputs &inputs, ScheduleCache *sharedCache) {
  if (!inputs.training.epCommOverlap)
    return planSchedules(inputs, sharedCache);
  PlanInputs resolved = inputs;
  resolved.schedules.clear();
  std::vector<std::string> refused;
  for (const std::string &file : inputs.schedules) {
    std::string error;
    if (std::optional<std::string> form = epOverlapSchedule(file, error))
      resolved.schedules.push_back(*form);
    else
      refused.push_back(file + ": " + error);
  }
  PlanResult result = planSchedules(resolved, sharedCache);
  result.errors.insert(result.errors.begin(), refused.begin(), refused.end());
  return result;
}

namespace {
PlanResult planSchedules(const PlanInputs &inputs, ScheduleCache *sharedCache) {
  Clock::time_point start = Clock::now();
  const SearchOptions &search = inputs.search;
  auto secondsLeft = [&] {
    return search.timeBudgetSeconds > 0
               ? search.timeBudgetSeconds -
                     std::chrono::duration<double>(Clock::now() - start).count()
               : kInf;
  };
  auto outOfTime = [&] { return secondsLeft() < 0; };
  ScheduleCache ownCache;
  ScheduleCache &cache = sharedCache ? *sharedCache : ownCache;
  size_t compilationsBefore = cache.compilations();
  // Compilations stop at the budget too (elaboration every 16K ops, and
  // between phases), so none runs far past it whatever the machine's load.
  ElabLimits limits = inputs.limits;
  if (search.timeBudgetSeconds > 0)
    limits.deadline = start + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(search.timeBudgetSeconds));
  PlanResult result;
  const Training &base = inputs.training;
  std::vector<Recompute> recomputes =
      search.recompute.empty() ? std::vector<Recompute>{base.recompute} : search.recompute;
  std::vector<int> zeros =
      search.zeroStages.empty() ? std::vector<int>{base.zeroStage} : search.zeroStages;

  // 1. Every point of the search, from sizes alone.
  std::vector<Variant> variants;
  std::vector<Group> groups;
  for (size_t f = 0; f < inputs.schedules.size(); ++f) {
    std::string error;
    std::vector<std::string> names = cache.parameterNames(inputs.schedules[f], error);
    if (!has(names, "P") || !has(names, "M")) {
      result.errors.push_back(inputs.schedules[f] + ": " +
                              (error.empty() ? "the schedule has no parameters P and M to plan"
                                             : error));
      continue;
    }
    LayoutSpace space;
    space.gpus = inputs.cluster.gpus;
    space.tensorParallel = orDefault(search.tensorParallel, base.tensorParallel);
    space.contextParallel = orDefault(search.contextParallel, 1);
    space.microBatchSizes = orDefault(search.microBatchSizes, base.microBatch);
    space.layers = inputs.model.transformerLayers();
    space.experts = inputs.config.routedExperts;
    space.globalBatch = base.globalBatch;
    space.hasV = has(names, "v");
    std::map<std::tuple<int64_t, int64_t, int64_t>, size_t> byKey;
    for (const ParallelSizes &sizes : enumerateLayouts(space)) {
      if (inputs.expertParallel && sizes.ep != *inputs.expertParallel)
        continue;
      size_t points = recomputes.size() * (sizes.dp == 1 ? 1 : zeros.size());
      result.layouts += points;
      if (minimumOps(sizes) > inputs.limits.maxOps) {
        result.overOps += points;
        continue;
      }
      auto [it, added] = byKey.try_emplace({sizes.pp, sizes.microbatches, sizes.v}, groups.size());
      if (added)
        groups.push_back({f, sizes.pp, sizes.microbatches, sizes.v, minimumOps(sizes), {}, kInf});
      for (Recompute r : recomputes)
        for (int zero : zeros) {
          // Over one replica ZeRO shards nothing: its stages are one point.
          if (sizes.dp == 1 && zero != *std::min_element(zeros.begin(), zeros.end()))
            continue;
          Training t = trainingFor(base, sizes);
          t.recompute = r;
          t.zeroStage = zero;
          groups[it->second].variants.push_back(variants.size());
          variants.push_back({f, sizes, t});
        }
    }
  }

  // 2. The sketch of each point: a memory bound and a time estimate. Cheap
  //    arithmetic, no schedule compiled.
  {
    std::atomic<size_t> next{0};
    runPool(threadCount(inputs, variants.size() / 64 + 1), [&] {
      for (size_t i; (i = next++) < variants.size();) {
        Variant &v = variants[i];
        std::optional<ParallelLayout> sketch = sketchLayout(inputs, v.sizes, v.training);
        std::string error;
        std::optional<PlanCosts> costs =
            sketch ? computeCosts(inputs.config, inputs.model, inputs.cluster, v.training, *sketch,
                                  error)
                   : std::nullopt;
        if (!costs) {
          v.staticBound = kInf; // the real placement is refused the same way
          continue;
        }
        double statics = 0, work = 0;
        for (const MemoryBreakdown &m : costs->rankMemory)
          statics += m.params + m.grads + m.optimizer;
        v.staticBound = statics / double(std::max<size_t>(1, costs->rankMemory.size()));
        for (const StageCost &s : costs->stages)
          work += s.F + s.B;
        v.estimate = work * double(v.sizes.microbatches) / double(v.sizes.pp) + costs->tail.total();
        if (!finite(v.estimate))
          v.estimate = kInf;
      }
    });
  }
  double memory = inputs.cluster.memoryBytes;
  auto mayFit = [&](const Variant &v) { return v.staticBound <= memory * kStaticMargin; };
  bool anyMayFit = std::any_of(variants.begin(), variants.end(), mayFit);
  for (Group &g : groups)
    for (size_t i : g.variants)
      if (mayFit(variants[i]))
        g.order = std::min(g.order, variants[i].estimate);
  // Best estimates first, so a budget that runs out leaves the worst unexplored.
  std::vector<size_t> order;
  std::vector<bool> compiled(groups.size(), false);
  for (size_t g = 0; g < groups.size(); ++g) {
    if (!anyMayFit || std::any_of(groups[g].variants.begin(), groups[g].variants.end(),
                                  [&](size_t i) { return mayFit(variants[i]); })) {
      order.push_back(g);
      compiled[g] = true;
    }
    if (anyMayFit)
      for (size_t i : groups[g].variants)
        result.cannotFit += !mayFit(variants[i]);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return groups[a].order < groups[b].order; });

  // 3. Compile each group once, cost every point, simulate the fitting ones
  //    that can still enter the ranking.
  bool pruneByBound = search.keep > 0 && search.rankBy == RankBy::StepTime;
  std::vector<double> best;                  // fitting step times so far, ascending
  std::map<size_t, double> bestOfFile;       // each schedule's best
  std::vector<std::pair<size_t, double>> unfitting; // every costed point over memory
  std::vector<Candidate> fitting;
  for (size_t b = 0; b < order.size(); b += kBatch) {
    size_t end = std::min(order.size(), b + kBatch);
    if (outOfTime()) {
      for (size_t k = b; k < order.size(); ++k)
        for (size_t i : groups[order[k]].variants)
          result.notReached += !anyMayFit || mayFit(variants[i]);
      result.timedOut = true;
      break;
    }
    double kth = pruneByBound && best.size() >= search.keep ? best[search.keep - 1] : kInf;
    std::map<size_t, double> fileBest = bestOfFile;
    std::vector<GroupResult> results(end - b);
    std::atomic<size_t> next{b};
    runPool(threadCount(inputs, end - b), [&] {
      for (size_t k; (k = next++) < end;) {
        const Group &group = groups[order[k]];
        GroupResult &out = results[k - b];
        const std::string &file = inputs.schedules[group.file];
        // Out of time, or a compilation that cannot end in the time left at
        // the rate this cache measured last (at its fewest ops): not started,
        // so --time holds within one compilation's misestimate.
        if (outOfTime() ||
            (search.timeBudgetSeconds > 0 && !cache.contains(file, group.P, group.M, group.v) &&
             cache.expectedSeconds(group.minimumOps) > secondsLeft())) {
          for (size_t i : group.variants)
            out.notReached += !anyMayFit || mayFit(variants[i]);
          continue;
        }
        std::string error;
        std::shared_ptr<const CompiledSchedule> c =
            cache.get(file, group.P, group.M, group.v, limits, error, expectedOps(group));
        if (!c && error == kPastDeadline) {
          for (size_t i : group.variants)
            out.notReached += !anyMayFit || mayFit(variants[i]);
          continue;
        }
        if (!c) {
          out.refused = group.variants.size();
          continue;
        }
        auto own = fileBest.find(group.file);
        double ownBest = own == fileBest.end() ? kInf : own->second;
        // Cost every point (cheap), then simulate the fitting ones by their
        // lower bound, tightening the threshold with this group's own exact
        // results (the same for any thread count: only this group's work).
        std::vector<std::pair<double, Candidate>> fittingHere;
        for (size_t i : group.variants) {
          const Variant &v = variants[i];
          if (outOfTime()) { // costing a large schedule takes a while per point
            out.notReached += !anyMayFit || mayFit(v);
            continue;
          }
          if (anyMayFit && !mayFit(v)) {
            out.unfitting.emplace_back(i, v.staticBound);
            continue;
          }
          std::optional<Candidate> candidate =
              costCandidate(inputs, *c, file, v.sizes, v.training, error);
          if (!candidate) {
            ++(error == "non-finite" ? out.nonFinite : out.refused);
            continue;
          }
          if (!candidate->fits) {
            out.unfitting.emplace_back(i, candidate->memory.total);
            ++out.overMemory;
            continue;
          }
          double bound = stepLowerBound(*c, *candidate);
          fittingHere.emplace_back(bound, std::move(*candidate));
        }
        std::stable_sort(fittingHere.begin(), fittingHere.end(),
                         [](const auto &a, const auto &b) { return a.first < b.first; });
        SimulationMemo memo;
        SimResult sim; // per group: its arrays are as large as the group's schedule
        std::vector<double> steps; // this group's, ascending
        for (auto &[bound, candidate] : fittingHere) {
          if (outOfTime()) { // one simulation of millions of ops takes seconds
            ++out.notReached;
            continue;
          }
          // Prunable when its bound exceeds both the keep-th best step and its
          // schedule's best, each the least of what earlier batches and this
          // group found (both only fall as the search goes on).
          double kthHere =
              search.keep > 0 && steps.size() >= search.keep ? steps[search.keep - 1] : kInf;
          double bestHere = steps.empty() ? kInf : steps.front();
          double limit = pruneByBound ? std::max(std::min(kth, kthHere), std::min(ownBest, bestHere))
                                      : kInf;
          if (bound > limit) {
            ++out.pruned;
            continue;
          }
          if (!simulateCandidate(inputs, *c, candidate, sim, &memo)) {
            ++out.nonFinite;
            continue;
          }
          double value = rankValue(candidate, search.rankBy);
          steps.insert(std::upper_bound(steps.begin(), steps.end(), value), value);
          out.simulated.push_back(std::move(candidate));
        }
      }
    });
    for (GroupResult &r : results) {
      result.refused += r.refused;
      result.pruned += r.pruned;
      result.nonFinite += r.nonFinite;
      result.notReached += r.notReached;
      result.notFitting += r.overMemory;
      result.timedOut |= r.notReached > 0;
      unfitting.insert(unfitting.end(), r.unfitting.begin(), r.unfitting.end());
      for (Candidate &c : r.simulated) {
        double value = rankValue(c, search.rankBy);
        best.insert(std::upper_bound(best.begin(), best.end(), value), value);
        size_t file = size_t(std::find(inputs.schedules.begin(), inputs.schedules.end(),
                                       c.schedule) - inputs.schedules.begin());
        auto [it, added] = bestOfFile.try_emplace(file, value);
        if (!added)
          it->second = std::min(it->second, value);
        fitting.push_back(std::move(c));
      }
    }
  }
  // Uncompiled points that could not fit are candidates to show when nothing fits.
  if (anyMayFit)
    for (size_t g = 0; g < groups.size(); ++g)
      if (!compiled[g])
        for (size_t i : groups[g].variants)
          unfitting.emplace_back(i, variants[i].staticBound);

  if (!fitting.empty() || !search.listUnfitting) {
    result.candidates = std::move(fitting);
  } else {
    // Nothing fits: the points that need least memory, simulated, to show how
    // far each is from fitting.
    std::stable_sort(unfitting.begin(), unfitting.end(),
                     [](const auto &a, const auto &b) { return a.second < b.second; });
    size_t shown = search.keep ? std::min(search.keep, unfitting.size()) : unfitting.size();
    for (size_t k = 0; k < shown; ++k) {
      if (outOfTime()) {
        result.timedOut = true;
        result.notReached += shown - k;
        break;
      }
      const Variant &v = variants[unfitting[k].first];
      const Group &g = *std::find_if(groups.begin(), groups.end(), [&](const Group &group) {
        return group.file == v.file && group.P == v.sizes.pp && group.M == v.sizes.microbatches &&
               group.v == v.sizes.v;
      });
      const std::string &file = inputs.schedules[v.file];
      std::string error;
      if (search.timeBudgetSeconds > 0 && !cache.contains(file, g.P, g.M, g.v) &&
          cache.expectedSeconds(g.minimumOps) > secondsLeft()) {
        result.timedOut = true;
        ++result.notReached;
        continue;
      }
      std::shared_ptr<const CompiledSchedule> c =
          cache.get(file, g.P, g.M, g.v, limits, error, expectedOps(g));
      if (!c && error == kPastDeadline) {
        result.timedOut = true;
        ++result.notReached;
        continue;
      }
      if (!c) {
        ++result.refused;
        continue;
      }
      if (auto candidate = evaluateCompiled(inputs, *c, file, v.sizes, v.training, error))
        result.candidates.push_back(std::move(*candidate));
      else
        ++(error == "non-finite" ? result.nonFinite : result.refused);
    }
  }
  std::stable_sort(result.candidates.begin(), result.candidates.end(),
                   [&](const Candidate &a, const Candidate &b) {
                     return ranksBefore(a, b, search.rankBy);
                   });
  if (!result.candidates.empty() && result.candidates[0].fits)
    result.recommended = 0;
  result.compilations = cache.compilations() - compilationsBefore;
  return result;
}
} // namespace

std::vector<Remedy> findRemedies(const PlanInputs &inputs, ScheduleCache *sharedCache) {
  ScheduleCache ownCache;
  ScheduleCache &cache = sharedCache ? *sharedCache : ownCache;
  std::vector<std::pair<std::string, PlanInputs>> changes;
  PlanInputs base = inputs;
  base.search.keep = 1;                // only the best of each re-plan is shown
  base.search.listUnfitting = false;
  for (int64_t factor : {2, 4, 8}) {
    PlanInputs more = base;
    more.cluster.gpus = inputs.cluster.gpus * factor;
    changes.emplace_back("--gpus " + std::to_string(more.cluster.gpus), std::move(more));
  }
  // Only what the search held fixed: what it varied cannot help.
  const char *recomputeNames[] = {"none", "selective", "full"};
  if (inputs.search.recompute.size() <= 1)
    for (Recompute r : {Recompute::Selective, Recompute::Full})
      if (int(r) > int(inputs.training.recompute)) {
        PlanInputs less = base;
        less.training.recompute = r;
        less.search.recompute.clear();
        changes.emplace_back(std::string("--recompute ") + recomputeNames[int(r)], std::move(less));
      }
  if (inputs.search.microBatchSizes.size() <= 1)
    for (int64_t b = inputs.training.microBatch / 2; b >= 1; b /= 2) {
      PlanInputs smaller = base;
      smaller.training.microBatch = b;
      smaller.search.microBatchSizes.clear();
      changes.emplace_back("--micro-batch-size " + std::to_string(b), std::move(smaller));
    }
  if (inputs.search.zeroStages.size() <= 1)
    for (int zero = inputs.training.zeroStage + 1; zero <= 3; ++zero) {
      PlanInputs sharded = base;
      sharded.training.zeroStage = zero;
      sharded.search.zeroStages.clear();
      changes.emplace_back("--zero " + std::to_string(zero), std::move(sharded));
    }
  // The remedies share what is left of the time budget.
  Clock::time_point start = Clock::now();
  std::vector<Remedy> remedies;
  for (auto &[change, changed] : changes) {
    if (inputs.search.timeBudgetSeconds > 0) {
      double left = inputs.search.timeBudgetSeconds -
                    std::chrono::duration<double>(Clock::now() - start).count();
      if (left <= 0)
        break;
      changed.search.timeBudgetSeconds = left;
    }
    PlanResult plan = makePlan(changed, &cache);
    Remedy remedy{change, std::nullopt};
    if (plan.recommended)
      remedy.best = std::move(plan.candidates[*plan.recommended]);
    remedies.push_back(std::move(remedy));
  }
  return remedies;
}

} // namespace pipec::plan
