#include "elab/ScheduleIR.h"

namespace pipec {

size_t ScheduleIR::totalOps() const {
  size_t total = 0;
  for (const RankOps &rank : ranks)
    total += rank.ops.size();
  return total;
}

void ScheduleIR::releaseIterations() {
  std::vector<IterationFrame>{{0, 0, 0}}.swap(iterations);
  std::vector<const ast::ForStmt *>{nullptr}.swap(loops);
}

std::string ScheduleIR::describeIteration(uint32_t iteration) const {
  if (iteration >= iterations.size()) // released
    return "";
  std::vector<const IterationFrame *> chain;
  for (uint32_t i = iteration; i != 0; i = iterations[i].parent)
    chain.push_back(&iterations[i]);
  std::string text;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (!text.empty())
      text += ", ";
    text += loops[(*it)->loop]->var.name + " = " + std::to_string((*it)->value);
  }
  return text;
}

} // namespace pipec
