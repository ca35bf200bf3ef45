#include "driver/SimUnits.h"

#include "frontend/Compilation.h"
#include "plan/CandidateJson.h"
#include "plan/PlanReport.h"
#include "plan/ScheduleCache.h"
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

int64_t paramValue(const ScheduleIR &ir, const char *name) {
  for (const auto &[n, value] : ir.params)
    if (n == name)
      return value;
  return 0;
}

} // namespace

std::optional<plan::ParallelSizes> unitsLayout(const Compilation &parsed, ElabOptions &elab,
                                               const plan::PlanInputs &inputs,
                                               std::string &error) {
  // P as given or as the schedule declares it: M depends on it, and the
  // schedule's requires may refuse its default M.
  const int64_t *givenP = defined(elab, "P");
  int64_t P = givenP ? *givenP : 0;
  for (const ast::Param &param : parsed.ast()->params)
    if (param.var.name == "P" && !givenP)
      P = param.defaultValue;
  if (P < 1) {
    error = "the schedule has no parameter P (its ranks) to lay the GPUs out by";
    return std::nullopt;
  }
  const plan::Training &t = inputs.training;
  std::optional<plan::ParallelSizes> layout =
      plan::layoutFor(inputs.cluster.gpus, t.globalBatch, inputs.config.routedExperts,
                      t.tensorParallel, t.contextParallel, P, t.microBatch, inputs.expertParallel.value_or(1), 0,
                      error);
  if (!layout)
    return std::nullopt;
  if (const int64_t *given = defined(elab, "M")) {
    if (*given != layout->microbatches) {
      error = fmt::format("-D M={} but --global-batch {} / (dp {} x micro-batch {}) is {} "
                          "micro-batches",
                          *given, t.globalBatch, layout->dp, t.microBatch, layout->microbatches);
      return std::nullopt;
    }
  } else {
    elab.defines.emplace_back("M", layout->microbatches);
  }
  return layout;
}

std::optional<plan::Candidate> unitsCandidate(const plan::CompiledSchedule &compiled,
                                              plan::ParallelSizes layout,
                                              const plan::PlanInputs &inputs, std::string &error) {
  const ScheduleIR &ir = compiled.ir();
  if (ir.numRanks < 1 || ir.numStages % ir.numRanks) {
    error = "stages are not a multiple of ranks";
    return std::nullopt;
  }
  layout.v = paramValue(ir, "v");
  std::string file = compiled.compilation->path();
  std::optional<plan::Candidate> c = plan::evaluateCompiled(
      inputs, compiled, file, layout, plan::trainingFor(inputs.training, layout), error);
  if (!c && error == "non-finite")
    error = "the costs in seconds are not finite: the cluster's numbers (peak_flops " +
            formatSignificant(inputs.cluster.peakFlops, 6) + ", bandwidths) are out of range";
  return c;
}

void writeUnitsJson(const plan::Candidate &c, llvm::json::OStream &j) {
  j.attributeObject("in_units",
                    [&] { plan::writeCandidateAttributes(c, plan::CandidateFields::Units, j); });
}

void printUnitsSummary(const plan::PlanInputs &inputs, const plan::Candidate &c,
                       llvm::raw_ostream &out) {
  const plan::MemoryBreakdown &m = c.memory;
  std::string mtp = inputs.model.mtpModules > 0 ? " with " + plan::describeMtpModules(inputs.model.mtpModules) : "";
  out << fmt::format("in seconds and bytes ({}{}, {} GPUs of {}; {}):\n", inputs.config.modelType, mtp,
                     inputs.cluster.gpus, inputs.cluster.name, plan::describeLayout(c.layout));
  out << fmt::format("  step time {} s (pipeline {} s + gradient reduction {} s), bubble "
                     "{}, MFU {}, {} tokens/s, {} GPU-hours per million tokens\n",
                     formatNumber(c.stepTime), formatNumber(c.makespan),
                     formatNumber(c.tailSeconds), formatPercent(c.bubbleFraction, 1),
                     formatPercent(c.mfu, 1), formatFixed(c.tokensPerSecond, 0),
                     formatNumber(c.gpuHoursPerMillionTokens));
  out << fmt::format("  memory per GPU (GB): params {}, grads {}, optimizer {}, activations {}, "
                     "buffers {}, runtime {}, total {} of {}: {}\n",
                     formatGigabytes(m.params), formatGigabytes(m.grads),
                     formatGigabytes(m.optimizer), formatGigabytes(m.activations),
                     formatGigabytes(m.buffers), formatGigabytes(m.runtime), formatGigabytes(m.total),
                     formatGigabytes(inputs.cluster.memoryBytes), c.fits ? "fits" : "does not fit");
}

} // namespace pipec
