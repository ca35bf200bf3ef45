#include "plan/CandidateJson.h"

#include <cmath>
#include <initializer_list>
#include <string>

namespace pipec::plan {

const char *recomputeName(Recompute r) {
  switch (r) {
  case Recompute::None:
    return "none";
  case Recompute::Selective:
    return "selective";
  case Recompute::Full:
    return "full";
  }
  return "none";
}

void writeNumber(llvm::json::OStream &j, llvm::StringRef key, double value) {
  if (std::isfinite(value))
    j.attribute(key, value);
  else
    j.attribute(key, nullptr);
}

// An object of named numbers, written in the order given (by name, as the
// candidate's own fields are).
void writeNumberObject(llvm::json::OStream &j, llvm::StringRef key,
                       std::initializer_list<std::pair<const char *, double>> fields) {
  j.attributeObject(key, [&] {
    for (const auto &[name, value] : fields)
      writeNumber(j, name, value);
  });
}

void writeCostsObject(const PlanCosts &costs, llvm::json::OStream &j) {
  for (const CostOverride &cost : toCostOverrides(costs))
    writeNumber(j, cost.name + "[" + std::to_string(cost.stage) + "]", cost.value);
}

void writeCandidateAttributes(const Candidate &c, CandidateFields fields, llvm::json::OStream &j) {
  bool plan = fields == CandidateFields::Plan;
  const ParallelSizes &l = c.layout;
  writeNumber(j, "bubble_fraction", c.bubbleFraction);
  j.attribute("context_parallel", l.cp);
  if (plan)
    j.attributeObject("costs", [&] { writeCostsObject(c.costs, j); });
  j.attribute("data_parallel", l.dp);
  j.attribute("expert_parallel", l.ep);
  // Uneven stages (set, or chosen by plan to balance them): the transformer
  // layers of the first and the last stage.
  if (c.training.firstStageLayers >= 0)
    j.attribute("first_stage_layers", c.training.firstStageLayers);
  j.attribute("fits", c.fits);
  writeNumber(j, "gpu_hours_per_million_tokens", c.gpuHoursPerMillionTokens);
  if (c.training.lastStageLayers >= 0)
    j.attribute("last_stage_layers", c.training.lastStageLayers);
  writeNumber(j, "memory_bytes_per_gpu", c.memory.total);
  const MemoryBreakdown &m = c.memory;
  writeNumberObject(j, "memory_parts",
                    {{"activations", m.activations}, {"buffers", m.buffers}, {"grads", m.grads},
                     {"optimizer", m.optimizer}, {"params", m.params}, {"runtime", m.runtime}});
  writeNumber(j, "mfu", c.mfu);
  j.attribute("micro_batch_size", l.mbs);
  if (plan) {
    j.attribute("name", c.name);
    j.attributeObject("params", [&] {
      for (const auto &[name, value] : c.params)
        j.attribute(name, value);
    });
  }
  // Where the busiest rank's step goes, and the mean bubble: why it is as fast as it is.
  const StepParts &p = c.parts;
  writeNumberObject(j, "parts_s",
                    {{"bubble", c.makespan * c.bubbleFraction}, {"compute", p.compute},
                     {"cp", p.cp}, {"dp", p.dp}, {"ep", p.ep}, {"optimizer", p.optimizer},
                     {"pp", p.pp}, {"tp", p.tp}});
  j.attribute("pipeline_parallel", l.pp);
  j.attribute("recompute", recomputeName(c.training.recompute));
  if (plan)
    j.attribute("schedule", c.schedule);
  writeNumber(j, "step_time_s", c.stepTime);
  writeNumber(j, "tail_s", c.tailSeconds);
  j.attribute("tensor_parallel", l.tp);
  writeNumber(j, "tokens_per_second", c.tokensPerSecond);
  j.attribute("zero_stage", int64_t(c.training.zeroStage));
}

} // namespace pipec::plan
