#include "plan/PlanReport.h"

#include "sim/SimOutputs.h"

#include "llvm/Support/JSON.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace pipec::plan {

std::string describeLayout(const ParallelSizes &l) {
  std::string text = fmt::format("P={} M={} dp={} ep={}", l.pp, l.microbatches, l.dp, l.ep);
  if (l.v > 0)
    text += fmt::format(" v={}", l.v);
  return text;
}

std::string formatGB(double bytes) { return fmt::format("{:.1f}", bytes / 1e9); }

namespace {

std::string percent(double fraction) { return fmt::format("{:.1f}%", 100 * fraction); }
// Four significant digits: enough to rank by, short enough for a table.
std::string seconds(double s) { return fmt::format("{:.4g}", s); }

std::string fileName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

void printModel(const PlanInputs &inputs, llvm::raw_ostream &out) {
  const Training &t = inputs.training;
  out << fmt::format("model {}: {:.2f}B parameters, {:.2f}B active per token, {} layers",
                     inputs.config.modelType, inputs.model.totalParams / 1e9,
                     inputs.model.activeParams / 1e9, inputs.config.numLayers);
  if (inputs.config.isMoe())
    out << fmt::format(", {} routed experts (top {})", inputs.config.routedExperts,
                       inputs.config.expertsPerToken);
  out << "\n";
  out << fmt::format("cluster {}: {} GPUs, {} GB each; batch {} x {} tokens, micro-batch {}, "
                     "recompute {}, ZeRO {}, t={}\n",
                     inputs.cluster.name, inputs.cluster.gpus, formatGB(inputs.cluster.memoryBytes),
                     t.globalBatch, t.sequenceLength, t.microBatch,
                     t.recompute == Recompute::None        ? "none"
                     : t.recompute == Recompute::Selective ? "selective"
                                                          : "full",
                     t.zeroStage, t.tensorParallel);
}

// Why `a` beat `b`: its step time, split into busy time, pipeline bubble and tail.
void printWhy(const Candidate &a, const Candidate &b, llvm::raw_ostream &out) {
  auto busy = [](const Candidate &c) { return c.makespan * (1 - c.bubbleFraction); };
  auto bubble = [](const Candidate &c) { return c.makespan * c.bubbleFraction; };
  out << fmt::format("runner-up: {} ({}), {} s per step: {} slower\n", b.name,
                     describeLayout(b.layout), seconds(b.stepTime),
                     percent(a.stepTime > 0 ? b.stepTime / a.stepTime - 1 : 0));
  out << fmt::format("why: compute {} s vs {} s, pipeline bubble {} s ({}) vs {} s ({}), "
                     "gradient reduction {} s vs {} s; memory {} GB vs {} GB per GPU\n",
                     seconds(busy(a)), seconds(busy(b)), seconds(bubble(a)),
                     percent(a.bubbleFraction), seconds(bubble(b)), percent(b.bubbleFraction),
                     seconds(a.tailSeconds), seconds(b.tailSeconds), formatGB(a.memory.total),
                     formatGB(b.memory.total));
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
  if (plan.candidates.empty())
    return;
  const char *kRow = "{:>3} {:<18} {:<28} {:>9} {:>7} {:>6} {:>10} {:>9} {:>7} {:>7} {:>7} "
                     "{:>7} {:>7} {:>7} {:>4}\n";
  out << "memory in GB per GPU (the rank that needs most)\n";
  out << fmt::format(kRow, "#", "schedule", "sizes", "step s", "bubble", "MFU", "tokens/s",
                     "GPU-h/Mt", "params", "grads", "optim", "activ", "buffers", "total", "fits");
  size_t shown = rows ? std::min(rows, plan.candidates.size()) : plan.candidates.size();
  for (size_t i = 0; i < shown; ++i) {
    const Candidate &c = plan.candidates[i];
    const MemoryBreakdown &m = c.memory;
    out << fmt::format(kRow, i + 1, c.name, describeLayout(c.layout), seconds(c.stepTime),
                       percent(c.bubbleFraction), percent(c.mfu),
                       fmt::format("{:.0f}", c.tokensPerSecond),
                       seconds(c.gpuHoursPerMillionTokens), formatGB(m.params),
                       formatGB(m.grads), formatGB(m.optimizer), formatGB(m.activations),
                       formatGB(m.buffers), formatGB(m.total), c.fits ? "yes" : "no");
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
                     best.name, fileName(best.schedule), describeLayout(best.layout),
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
    printWhy(best, *runnerUp, out);
}

void printPlanJson(const PlanInputs &inputs, const PlanResult &plan, llvm::raw_ostream &out) {
  llvm::json::OStream j(out, 2);
  j.object([&] {
    j.attributeArray("candidates", [&] {
      for (const Candidate &c : plan.candidates)
        j.object([&] {
          j.attribute("bubble_fraction", c.bubbleFraction);
          j.attributeObject("costs", [&] {
            std::vector<std::pair<std::string, double>> costs;
            for (const CostOverride &cost : toCostOverrides(c.costs))
              costs.emplace_back(cost.name + "[" + std::to_string(cost.stage) + "]", cost.value);
            for (const auto &[name, value] : costs)
              j.attribute(name, value);
          });
          j.attribute("data_parallel", c.layout.dp);
          j.attribute("expert_parallel", c.layout.ep);
          j.attribute("fits", c.fits);
          j.attribute("gpu_hours_per_million_tokens", c.gpuHoursPerMillionTokens);
          j.attribute("memory_bytes_per_gpu", c.memory.total);
          j.attributeObject("memory_parts", [&] {
            j.attribute("activations", c.memory.activations);
            j.attribute("buffers", c.memory.buffers);
            j.attribute("grads", c.memory.grads);
            j.attribute("optimizer", c.memory.optimizer);
            j.attribute("params", c.memory.params);
          });
          j.attribute("mfu", c.mfu);
          j.attribute("name", c.name);
          j.attributeObject("params", [&] {
            for (const auto &[name, value] : c.params)
              j.attribute(name, value);
          });
          j.attribute("schedule", c.schedule);
          j.attribute("step_time_s", c.stepTime);
          j.attribute("tail_s", c.tailSeconds);
          j.attribute("tokens_per_second", c.tokensPerSecond);
        });
    });
    j.attributeObject("model", [&] {
      double layerBytes = 0;
      for (const LayerSpec &layer : inputs.model.layers)
        if (layer.kind == LayerKind::Dense || layer.kind == LayerKind::Moe)
          layerBytes = std::max(layerBytes, layerActivationBytes(inputs.config, layer.kind,
                                                                 inputs.training));
      j.attribute("activation_bytes_per_layer", layerBytes);
      j.attribute("parameters_active", inputs.model.activeParams);
      j.attribute("parameters_total", inputs.model.totalParams);
    });
    if (plan.recommended)
      j.attribute("recommended", int64_t(*plan.recommended));
    else
      j.attribute("recommended", nullptr);
    j.attribute("refused", int64_t(plan.refused));
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
