#include "plan/Planner.h"

#include "frontend/Compilation.h"
#include "plan/StageLayout.h"
#include "sim/Simulator.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <thread>

namespace pipec::plan {

namespace {

// The parameter names a schedule declares, from its syntax tree; empty when it
// cannot be read or parsed (the caller reports the diagnostics).
std::vector<std::string> parameterNames(Compilation &compilation) {
  std::vector<std::string> names;
  if (compilation.load() && compilation.parse())
    for (const ast::Param &p : compilation.ast()->params)
      names.push_back(p.var.name);
  return names;
}

bool has(const std::vector<std::string> &names, const char *name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string firstError(Compilation &compilation) {
  for (const Diagnostic &d : compilation.diags().diagnostics())
    if (d.severity == Severity::Error)
      return d.message;
  return "the schedule was refused";
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

// Everything one compiled schedule needs to be re-costed and re-simulated.
struct Compiled {
  std::unique_ptr<Compilation> compilation;
  std::shared_ptr<const SimulationPlan> plan;
};

std::optional<Compiled> compile(const PlanInputs &inputs, const std::string &file,
                                const std::vector<std::string> &names, const ParallelSizes &layout,
                                std::string &error) {
  ElabOptions elab;
  elab.limits = inputs.limits;
  elab.defines.emplace_back("P", layout.pp);
  elab.defines.emplace_back("M", layout.microbatches);
  if (layout.v > 0)
    elab.defines.emplace_back("v", layout.v);
  (void)names;
  Compiled c{std::make_unique<Compilation>(file), nullptr};
  c.compilation->diags().setErrorLimit(1);
  if (!c.compilation->runAll(elab, CheckOptions{})) {
    error = firstError(*c.compilation);
    return std::nullopt;
  }
  c.compilation->releaseCheckContext();
  const ScheduleIR &ir = *c.compilation->ir();
  int64_t transformerLayers = int64_t(inputs.model.layers.size()) - 2;
  // Each stage holds a layer: a transformer layer, or the embedding or head
  // alone (uneven stages, --first/last-stage-layers 0).
  if (ir.numStages > transformerLayers + 2) {
    error = std::to_string(ir.numStages) + " stages for " + std::to_string(transformerLayers) +
            " layers";
    return std::nullopt;
  }
  if (ir.numStages % ir.numRanks) {
    error = "stages are not a multiple of ranks";
    return std::nullopt;
  }
  c.plan = std::make_shared<const SimulationPlan>(
      buildSimulationPlan(ir, *c.compilation->report()->comm));
  return c;
}

// Costs, simulates and measures one layout of a compiled schedule, reusing `sim`.
std::optional<Candidate> measure(const PlanInputs &inputs, const Compiled &c,
                                 const std::string &file, const ParallelSizes &layout, SimResult &sim,
                                 std::string &error) {
  const ScheduleIR &ir = *c.compilation->ir();
  const CheckReport &report = *c.compilation->report();
  ParallelLayout parallel;
  parallel.pipelineRanks = layout.pp;
  parallel.dataParallel = layout.dp;
  parallel.expertParallel = layout.ep;
  parallel.chunksPerRank = ir.numStages / ir.numRanks;
  parallel.microbatches = layout.microbatches;
  std::optional<std::vector<std::pair<size_t, size_t>>> ranges =
      stageLayerRanges(inputs.model, ir.numStages, inputs.training, error);
  if (!ranges)
    return std::nullopt;
  parallel.stageLayers = std::move(*ranges);
  placeStages(ir, parallel);
  for (const RankMemory &m : report.memory)
    parallel.peakActivations.push_back(double(m.peakActivations));

  Candidate candidate;
  std::optional<PlanCosts> costs = computeCosts(inputs.config, inputs.model, inputs.cluster,
                                                inputs.training, parallel, error);
  if (!costs)
    return std::nullopt;
  candidate.costs = std::move(*costs);
  simulate(c.plan, CostModel::build(ir, toCostOverrides(candidate.costs)), sim);

  candidate.schedule = file;
  candidate.name = ir.name;
  candidate.params = ir.params;
  candidate.layout = layout;
  candidate.copies = ir.copies;
  candidate.stagesPerRank = CostModel::stagesPerRank(ir);
  candidate.makespan = sim.makespan;
  candidate.tailSeconds = candidate.costs.tail.total();
  candidate.stepTime = sim.makespan + candidate.tailSeconds;
  size_t ranks = sim.ranks.size();
  candidate.bubbleFraction =
      sim.makespan > 0 && ranks ? sim.totalBubble() / double(ranks) / sim.makespan : 0;

  const Training &t = inputs.training;
  double gpus = double(layout.pp * layout.dp * t.modelParallelGpus());
  double tokens = double(t.globalBatch) * double(t.sequenceLength);
  double modelFlops = 0; // forward + backward (x3) of every micro-batch, no recomputation
  for (const StageCost &stage : candidate.costs.stages)
    modelFlops += 3 * stage.forwardFlops * double(t.modelParallelGpus());
  modelFlops *= double(layout.dp) * double(layout.microbatches);
  if (candidate.stepTime > 0) {
    candidate.mfu = modelFlops / (candidate.stepTime * gpus * inputs.cluster.peakFlops);
    candidate.tokensPerSecond = tokens / candidate.stepTime;
    candidate.gpuHoursPerMillionTokens = gpus * candidate.stepTime / 3600 / (tokens / 1e6);
  }
  for (const MemoryBreakdown &m : candidate.costs.rankMemory)
    if (m.total > candidate.memory.total)
      candidate.memory = m;
  candidate.fits = candidate.memory.total <= inputs.cluster.memoryBytes;
  return candidate;
}

// The layouts of one (schedule, P, v): they share one compilation.
struct Group {
  size_t file;
  std::vector<ParallelSizes> layouts;
  std::vector<Candidate> results;
  size_t refused = 0;
};

bool ranksBefore(const Candidate &a, const Candidate &b) {
  if (a.fits != b.fits)
    return a.fits;
  double ka = a.fits ? a.stepTime : a.memory.total, kb = b.fits ? b.stepTime : b.memory.total;
  if (ka != kb)
    return ka < kb;
  if (a.schedule != b.schedule)
    return a.schedule < b.schedule;
  return std::tie(a.layout.pp, a.layout.v, a.layout.ep) < std::tie(b.layout.pp, b.layout.v, b.layout.ep);
}

} // namespace

std::vector<std::pair<size_t, size_t>> splitLayers(const ModelLayers &model, int64_t stages) {
  std::vector<std::pair<size_t, size_t>> ranges;
  int64_t layers = int64_t(model.layers.size()) - 2; // without embedding and head
  if (stages < 1 || layers < stages)
    return ranges;
  int64_t base = layers / stages, spare = layers % stages;
  size_t next = 0;
  for (int64_t s = 0; s < stages; ++s) {
    size_t count = size_t(base + (s >= 1 && s <= spare ? 1 : 0));
    if (s == 0)
      count += 1; // the embedding
    if (s == stages - 1)
      count += 1; // the head
    ranges.emplace_back(next, next + count);
    next += count;
  }
  return ranges;
}

std::optional<Candidate> evaluateCandidate(const PlanInputs &inputs, const std::string &file,
                                           const ParallelSizes &layout, std::string &error) {
  Compilation probe(file);
  std::vector<std::string> names = parameterNames(probe);
  std::optional<Compiled> c = compile(inputs, file, names, layout, error);
  if (!c)
    return std::nullopt;
  SimResult sim;
  return measure(inputs, *c, file, layout, sim, error);
}

PlanResult makePlan(const PlanInputs &inputs) {
  PlanResult result;
  std::vector<Group> groups;
  std::vector<std::vector<std::string>> names(inputs.schedules.size());
  for (size_t f = 0; f < inputs.schedules.size(); ++f) {
    Compilation probe(inputs.schedules[f]);
    names[f] = parameterNames(probe);
    if (!has(names[f], "P") || !has(names[f], "M")) {
      result.errors.push_back(inputs.schedules[f] + ": " +
                              (probe.ast() ? "the schedule has no parameters P and M to plan"
                                           : firstError(probe)));
      continue;
    }
    LayoutSpace space;
    space.gpus = inputs.cluster.gpus;
    space.tensorParallel = inputs.training.modelParallelGpus(); // GPUs = P x dp x (t x cp)
    space.layers = int64_t(inputs.model.layers.size()) - 2;
    space.experts = inputs.config.routedExperts;
    space.globalBatch = inputs.training.globalBatch;
    space.microBatchSize = inputs.training.microBatch;
    space.hasV = has(names[f], "v");
    std::map<std::pair<int64_t, int64_t>, size_t> byDepth;
    for (const ParallelSizes &layout : enumerateLayouts(space)) {
      if (inputs.expertParallel && layout.ep != *inputs.expertParallel)
        continue;
      auto [it, added] = byDepth.try_emplace({layout.pp, layout.v}, groups.size());
      if (added)
        groups.push_back({f, {}, {}, 0});
      groups[it->second].layouts.push_back(layout);
    }
  }

  // Groups are independent: each compiles its own schedule and simulates it.
  std::atomic<size_t> next{0};
  auto work = [&] {
    SimResult sim;
    for (size_t g; (g = next++) < groups.size();) {
      Group &group = groups[g];
      const std::string &file = inputs.schedules[group.file];
      std::string error;
      std::optional<Compiled> c = compile(inputs, file, names[group.file], group.layouts[0], error);
      if (!c) {
        group.refused += group.layouts.size();
        continue;
      }
      for (const ParallelSizes &layout : group.layouts) {
        if (auto candidate = measure(inputs, *c, file, layout, sim, error))
          group.results.push_back(std::move(*candidate));
        else
          ++group.refused;
      }
    }
  };
  unsigned threads = inputs.threads ? inputs.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = unsigned(std::min<size_t>(threads, std::max<size_t>(1, groups.size())));
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i)
    pool.emplace_back(work);
  work();
  for (std::thread &thread : pool)
    thread.join();

  for (Group &group : groups) {
    result.refused += group.refused;
    for (Candidate &candidate : group.results)
      result.candidates.push_back(std::move(candidate));
  }
  std::stable_sort(result.candidates.begin(), result.candidates.end(), ranksBefore);
  if (!result.candidates.empty() && result.candidates[0].fits)
    result.recommended = 0;
  return result;
}

std::vector<Remedy> findRemedies(const PlanInputs &inputs) {
  std::vector<std::pair<std::string, PlanInputs>> changes;
  for (int64_t factor : {2, 4, 8}) {
    PlanInputs more = inputs;
    more.cluster.gpus = inputs.cluster.gpus * factor;
    changes.emplace_back("--gpus " + std::to_string(more.cluster.gpus), std::move(more));
  }
  const char *recomputeNames[] = {"none", "selective", "full"};
  for (Recompute r : {Recompute::Selective, Recompute::Full})
    if (int(r) > int(inputs.training.recompute)) {
      PlanInputs less = inputs;
      less.training.recompute = r;
      changes.emplace_back(std::string("--recompute ") + recomputeNames[int(r)], std::move(less));
    }
  for (int64_t b = inputs.training.microBatch / 2; b >= 1; b /= 2) {
    PlanInputs smaller = inputs;
    smaller.training.microBatch = b;
    changes.emplace_back("--micro-batch-size " + std::to_string(b), std::move(smaller));
  }
  for (int zero = inputs.training.zeroStage + 1; zero <= 3; ++zero) {
    PlanInputs sharded = inputs;
    sharded.training.zeroStage = zero;
    changes.emplace_back("--zero " + std::to_string(zero), std::move(sharded));
  }
  std::vector<Remedy> remedies;
  for (auto &[change, changed] : changes) {
    PlanResult plan = makePlan(changed);
    Remedy remedy{change, std::nullopt};
    if (plan.recommended)
      remedy.best = std::move(plan.candidates[*plan.recommended]);
    remedies.push_back(std::move(remedy));
  }
  return remedies;
}

} // namespace pipec::plan
