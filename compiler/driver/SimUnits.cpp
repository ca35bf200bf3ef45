#include "driver/SimUnits.h"

#include "frontend/Compilation.h"
#include "plan/PlanReport.h"
#include "sim/SimOutputs.h"

#include <fmt/format.h>

#include <algorithm>

namespace pipec {

namespace {

const int64_t *defined(const ElabOptions &elab, const std::string &name) {
  for (const auto &[n, value] : elab.defines)
    if (n == name)
      return &value;
  return nullptr;
}

int64_t paramValue(const ScheduleIR *ir, const char *name) {
  for (const auto &[n, value] : ir->params)
    if (n == name)
      return value;
  return 0;
}

} // namespace

std::optional<plan::Candidate> costInUnits(const std::string &file, ElabOptions &elab,
                                           const plan::PlanInputs &inputs, std::string &error) {
  // P as given or as the schedule declares it: M depends on it, and the
  // schedule's requires may refuse its default M.
  Compilation probe(file);
  if (!probe.load() || !probe.parse())
    return std::nullopt; // sim reports the diagnostics when it compiles the file
  const int64_t *givenP = defined(elab, "P");
  int64_t P = givenP ? *givenP : 0;
  for (const ast::Param &param : probe.ast()->params)
    if (param.var.name == "P" && !givenP)
      P = param.defaultValue;
  const plan::Training &t = inputs.training;
  int64_t gpus = inputs.cluster.gpus;
  if (P < 1) {
    error = "the schedule has no parameter P (its ranks) to lay the GPUs out by";
    return std::nullopt;
  }
  if (gpus % (P * t.modelParallelGpus())) {
    error = fmt::format("{} GPUs do not split into pipelines of P = {} ranks{}", gpus, P,
                        t.modelParallelGpus() > 1 ? fmt::format(" x tp {} x cp {}", t.tensorParallel, t.contextParallel) : "");
    return std::nullopt;
  }
  int64_t dp = gpus / (P * t.modelParallelGpus());
  if (t.globalBatch % (dp * t.microBatch)) {
    error = fmt::format("--global-batch {} is not a whole number of micro-batches of {} over "
                        "dp = {} replicas",
                        t.globalBatch, t.microBatch, dp);
    return std::nullopt;
  }
  int64_t M = t.globalBatch / (dp * t.microBatch);
  if (const int64_t *given = defined(elab, "M")) {
    if (*given != M) {
      error = fmt::format("-D M={} but --global-batch {} / (dp {} x micro-batch {}) is {} "
                          "micro-batches",
                          *given, t.globalBatch, dp, t.microBatch, M);
      return std::nullopt;
    }
  } else {
    elab.defines.emplace_back("M", M);
  }
  int64_t ep = inputs.expertParallel.value_or(1);
  if (dp % ep || (inputs.config.isMoe() ? inputs.config.routedExperts % ep : ep > 1)) {
    error = fmt::format("--ep {} must divide dp = {} and the {} routed experts", ep, dp,
                        inputs.config.routedExperts);
    return std::nullopt;
  }
  // A schedule that refuses this M is reported by sim itself, located (exit 1).
  Compilation checked(file);
  if (!checked.runAll(elab, CheckOptions{}))
    return std::nullopt;
  plan::ParallelSizes layout{P, dp, ep, M, paramValue(checked.ir(), "v")};
  return plan::evaluateCandidate(inputs, file, layout, error);
}

void writeUnitsJson(const plan::Candidate &c, llvm::json::OStream &j) {
  j.attributeObject("in_units", [&] {
    j.attribute("bubble_fraction", c.bubbleFraction);
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
    j.attribute("step_time_s", c.stepTime);
    j.attribute("tail_s", c.tailSeconds);
    j.attribute("tokens_per_second", c.tokensPerSecond);
  });
}

void printUnitsSummary(const plan::PlanInputs &inputs, const plan::Candidate &c,
                       llvm::raw_ostream &out) {
  const plan::MemoryBreakdown &m = c.memory;
  out << fmt::format("in seconds and bytes ({}, {} GPUs of {}; {}):\n", inputs.config.modelType,
                     inputs.cluster.gpus, inputs.cluster.name, plan::describeLayout(c.layout));
  out << fmt::format("  step time {} s (pipeline {} s + gradient reduction {} s), bubble "
                     "{:.1f}%, MFU {:.1f}%, {:.0f} tokens/s, {} GPU-hours per million tokens\n",
                     formatNumber(c.stepTime), formatNumber(c.makespan),
                     formatNumber(c.tailSeconds), 100 * c.bubbleFraction, 100 * c.mfu,
                     c.tokensPerSecond, formatNumber(c.gpuHoursPerMillionTokens));
  out << fmt::format("  memory per GPU (GB): params {}, grads {}, optimizer {}, activations {}, "
                     "buffers {}, total {} of {}: {}\n",
                     plan::formatGB(m.params), plan::formatGB(m.grads),
                     plan::formatGB(m.optimizer), plan::formatGB(m.activations),
                     plan::formatGB(m.buffers), plan::formatGB(m.total),
                     plan::formatGB(inputs.cluster.memoryBytes), c.fits ? "fits" : "does not fit");
}

} // namespace pipec
