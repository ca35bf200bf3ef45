#include "plan/PlanReport.h"

#include "plan/CandidateJson.h"
#include "sim/SimOutputs.h"
#include "support/NumberText.h"

#include "llvm/Support/JSON.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace pipec::plan {

std::string describeLayout(const ParallelSizes &l) {
  std::string text = fmt::format("P={} M={} dp={} ep={}", l.pp, l.microbatches, l.dp, l.ep);
  if (l.v > 0)
    text += fmt::format(" v={}", l.v);
  if (l.tp > 1)
    text += fmt::format(" tp={}", l.tp);
  if (l.cp > 1)
    text += fmt::format(" cp={}", l.cp);
  if (l.mbs > 1)
    text += fmt::format(" b={}", l.mbs);
  return text;
}

std::string describeMtpModules(int64_t modules) {
  return fmt::format("{} MTP module{}", modules, modules == 1 ? "" : "s");
}

std::string describeCandidate(const Candidate &c, const SearchOptions &search) {
  std::string text = describeLayout(c.layout);
  if (search.recompute.size() > 1)
    text += std::string(" rc=") + recomputeName(c.training.recompute);
  if (search.zeroStages.size() > 1)
    text += fmt::format(" z={}", c.training.zeroStage);
  // Stage sizes plan chose to balance the stages (--first/last-stage-layers).
  if (search.balanceStages && c.training.firstStageLayers >= 0)
    text += fmt::format(" ends={}/{}", c.training.firstStageLayers, c.training.lastStageLayers);
  return text;
}

namespace {

// Numbers through the one formatter (support/NumberText.h): GB with one
// decimal, percentages with one, seconds with four significant digits (enough
// to rank by, short enough for a table).
std::string formatGB(double bytes) { return formatGigabytes(bytes); }
std::string percent(double fraction) { return formatPercent(fraction, 1); }
std::string seconds(double s) { return formatSignificant(s, 4); }

std::string fileName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A fixed setting, or the values the search tries: "1", "1,2,4,8".
template <typename T, typename Name>
std::string setting(const std::vector<T> &searched, T fixed, Name name) {
  if (searched.size() <= 1)
    return std::string(name(searched.empty() ? fixed : searched[0]));
  std::string text;
  for (const T &value : searched)
    text += std::string(text.empty() ? "" : ",") + name(value);
  return text;
}

void printModel(const PlanInputs &inputs, llvm::raw_ostream &out) {
  const Training &t = inputs.training;
  const SearchOptions &s = inputs.search;
  out << fmt::format("model {}: {}B parameters, {}B active per token, {} layers",
                     inputs.config.modelType, formatFixed(inputs.model.totalParams / 1e9, 2),
                     formatFixed(inputs.model.activeParams / 1e9, 2), inputs.config.numLayers);
  if (inputs.config.isMoe())
    out << fmt::format(", {} routed experts (top {})", inputs.config.routedExperts,
                       inputs.config.expertsPerToken);
  if (inputs.model.mtpModules > 0)
    out << ", " << describeMtpModules(inputs.model.mtpModules) << " trained on the last stage";
  out << "\n";
  auto integer = [](int64_t v) { return std::to_string(v); };
  out << fmt::format("cluster {}: {} GPUs, {} GB each; batch {} x {} tokens, micro-batch {}, "
                     "recompute {}, ZeRO {}, t={}",
                     inputs.cluster.name, inputs.cluster.gpus, formatGB(inputs.cluster.memoryBytes),
                     t.globalBatch, t.sequenceLength, setting(s.microBatchSizes, t.microBatch, integer),
                     setting(s.recompute, t.recompute, recomputeName),
                     setting(s.zeroStages, t.zeroStage, [](int z) { return std::to_string(z); }),
                     setting(s.tensorParallel, t.tensorParallel, integer));
  if (s.contextParallel.size() > 1)
    out << ", cp=" << setting(s.contextParallel, int64_t(1), integer);
  out << "\n";
}

// Why `a` beat `b`: where each one's step goes (the busiest rank's compute and
// exposed TP, CP, EP, pipeline and data-parallel communication, its optimizer
// step, the mean pipeline bubble) and the memory each needs.
void printWhy(const Candidate &a, const Candidate &b, const SearchOptions &search,
              llvm::raw_ostream &out) {
  auto bubble = [](const Candidate &c) { return c.makespan * c.bubbleFraction; };
  out << fmt::format("runner-up: {} ({}), {} s per step: {} slower\n", b.name,
                     describeCandidate(b, search), seconds(b.stepTime),
                     percent(a.stepTime > 0 ? b.stepTime / a.stepTime - 1 : 0));
  auto pair = [](const char *what, double x, double y) {
    return fmt::format("{} {} s vs {} s", what, seconds(x), seconds(y));
  };
  const StepParts &p = a.parts, &q = b.parts;
  out << "why: " << pair("compute", p.compute, q.compute) << ", " << pair("TP", p.tp, q.tp)
      << ", " << pair("CP", p.cp, q.cp) << ", " << pair("EP", p.ep, q.ep) << ", "
      << pair("PP", p.pp, q.pp) << ", " << pair("DP", p.dp, q.dp) << ", "
      << pair("optimizer", p.optimizer, q.optimizer) << ", "
      << fmt::format("pipeline bubble {} s ({}) vs {} s ({})", seconds(bubble(a)),
                     percent(a.bubbleFraction), seconds(bubble(b)), percent(b.bubbleFraction))
      << fmt::format("; memory {} GB vs {} GB per GPU\n", formatGB(a.memory.total),
                     formatGB(b.memory.total));
}

// What the search covered and left out, when it left anything out.
void printSearch(const PlanResult &plan, const SearchOptions &search, llvm::raw_ostream &out) {
  out << fmt::format("search: {} layouts, {} compilations", plan.layouts, plan.compilations);
  if (plan.overOps)
    out << fmt::format("; {} over --max-ops (counted, not elaborated)", plan.overOps);
  if (plan.cannotFit)
    out << fmt::format("; {} whose weights and optimizer state alone overflow memory",
                       plan.cannotFit);
  if (plan.notFitting)
    out << fmt::format("; {} over memory", plan.notFitting);
  if (plan.pruned)
    out << fmt::format("; {} pruned (lower bound above the best {})", plan.pruned, search.keep);
  if (plan.nonFinite)
    out << fmt::format("; {} with non-finite costs", plan.nonFinite);
  out << "\n";
  if (plan.timedOut)
    out << fmt::format("search stopped at the time budget ({} s): {} layouts not evaluated; "
                       "the ranking is of those evaluated, best estimates first\n",
                       search.timeBudgetSeconds, plan.notReached);
}

} // namespace

void printPlanText(const PlanInputs &inputs, const PlanResult &plan, llvm::raw_ostream &out,
                   size_t rows) {
  printModel(inputs, out);
  size_t fitting = std::count_if(plan.candidates.begin(), plan.candidates.end(),
                                 [](const Candidate &c) { return c.fits; });
  out << fmt::format("{} candidates simulated, {} fit in memory; {} layouts refused by a "
                     "schedule's requirements or checks\n",
                     plan.candidates.size(), fitting, plan.refused);
  printSearch(plan, inputs.search, out);
  if (plan.candidates.empty())
    return;
  size_t shown = rows ? std::min(rows, plan.candidates.size()) : plan.candidates.size();
  // Columns as wide as their longest entry, so long schedule names stay aligned.
  size_t nameWidth = 18, sizesWidth = 28;
  std::vector<std::string> sizes;
  for (size_t i = 0; i < shown; ++i) {
    sizes.push_back(describeCandidate(plan.candidates[i], inputs.search));
    nameWidth = std::max(nameWidth, plan.candidates[i].name.size());
    sizesWidth = std::max(sizesWidth, sizes.back().size());
  }
  std::string kRow = fmt::format("{{:>3}} {{:<{}}} {{:<{}}} {{:>9}} {{:>7}} {{:>6}} {{:>10}} "
                                 "{{:>9}} {{:>7}} {{:>7}} {{:>7}} {{:>7}} {{:>7}} {{:>7}} {{:>7}} "
                                 "{{:>4}}\n",
                                 nameWidth, sizesWidth);
  out << "memory in GB per GPU (the rank that needs most; runtime: CUDA context, NCCL buffers, "
         "fragmentation)\n";
  out << fmt::format(fmt::runtime(kRow), "#", "schedule", "sizes", "step s", "bubble", "MFU", "tokens/s",
                     "GPU-h/Mt", "params", "grads", "optim", "activ", "buffers", "runtime",
                     "total", "fits");
  for (size_t i = 0; i < shown; ++i) {
    const Candidate &c = plan.candidates[i];
    const MemoryBreakdown &m = c.memory;
    out << fmt::format(fmt::runtime(kRow), i + 1, c.name, sizes[i], seconds(c.stepTime),
                       percent(c.bubbleFraction), percent(c.mfu),
                       formatFixed(c.tokensPerSecond, 0),
                       seconds(c.gpuHoursPerMillionTokens), formatGB(m.params),
                       formatGB(m.grads), formatGB(m.optimizer), formatGB(m.activations),
                       formatGB(m.buffers), formatGB(m.runtime), formatGB(m.total),
                       c.fits ? "yes" : "no");
  }
  if (shown < plan.candidates.size())
    out << fmt::format("... {} more\n", plan.candidates.size() - shown);
  if (!plan.recommended) {
    out << "nothing fits in " << formatGB(inputs.cluster.memoryBytes) << " GB per GPU\n";
    return;
  }
  const Candidate &best = plan.candidates[*plan.recommended];
  out << fmt::format("recommended: {} ({}, {}): {} s per step, bubble {}, MFU {}, {} "
                     "GPU-hours per million tokens, {} GB per GPU\n",
                     best.name, fileName(best.schedule), describeCandidate(best, inputs.search),
                     seconds(best.stepTime), percent(best.bubbleFraction), percent(best.mfu),
                     seconds(best.gpuHoursPerMillionTokens), formatGB(best.memory.total));
  // The runner-up: the best fitting candidate of another schedule, else the next one.
  const Candidate *runnerUp = nullptr;
  for (size_t i = *plan.recommended + 1; i < plan.candidates.size() && !runnerUp; ++i)
    if (plan.candidates[i].fits && plan.candidates[i].schedule != best.schedule)
      runnerUp = &plan.candidates[i];
  if (!runnerUp && *plan.recommended + 1 < plan.candidates.size() &&
      plan.candidates[*plan.recommended + 1].fits)
    runnerUp = &plan.candidates[*plan.recommended + 1];
  if (runnerUp)
    printWhy(best, *runnerUp, inputs.search, out);
}

void printPlanJson(const PlanInputs &inputs, const PlanResult &plan, llvm::raw_ostream &out) {
  llvm::json::OStream j(out, 2);
  j.object([&] {
    j.attributeArray("candidates", [&] {
      for (const Candidate &c : plan.candidates)
        j.object([&] { writeCandidateAttributes(c, CandidateFields::Plan, j); });
    });
    j.attributeObject("model", [&] {
      double layerBytes = 0;
      for (const LayerSpec &layer : inputs.model.layers)
        if (layer.kind == LayerKind::Dense || layer.kind == LayerKind::Moe)
          layerBytes = std::max(layerBytes, layerActivationBytes(inputs.config, layer.kind,
                                                                 inputs.training));
      writeNumber(j, "activation_bytes_per_layer", layerBytes);
      writeNumber(j, "parameters_active", inputs.model.activeParams);
      writeNumber(j, "parameters_total", inputs.model.totalParams);
    });
    if (plan.recommended)
      j.attribute("recommended", int64_t(*plan.recommended));
    else
      j.attribute("recommended", nullptr);
    j.attribute("refused", int64_t(plan.refused));
    j.attributeObject("search", [&] {
      j.attribute("cannot_fit", int64_t(plan.cannotFit));
      j.attribute("compilations", int64_t(plan.compilations));
      j.attribute("layouts", int64_t(plan.layouts));
      j.attribute("non_finite", int64_t(plan.nonFinite));
      j.attribute("not_fitting", int64_t(plan.notFitting));
      j.attribute("not_reached", int64_t(plan.notReached));
      j.attribute("over_max_ops", int64_t(plan.overOps));
      j.attribute("pruned", int64_t(plan.pruned));
      j.attribute("timed_out", plan.timedOut);
    });
  });
  out << "\n";
}

void printRemedies(const std::vector<Remedy> &remedies, llvm::raw_ostream &out) {
  out << "what would fit (each change alone, re-planned):\n";
  bool any = false;
  for (const Remedy &r : remedies) {
    if (!r.best)
      continue;
    any = true;
    out << fmt::format("  {}: {} ({}), {} s per step, {} GB per GPU\n", r.change, r.best->name,
                       describeLayout(r.best->layout), seconds(r.best->stepTime),
                       formatGB(r.best->memory.total));
  }
  if (!any)
    out << "  none of: more GPUs (up to 8x), recomputation, a smaller micro-batch, a higher "
           "ZeRO stage\n";
}

} // namespace pipec::plan
