#include "elab/ScheduleIR.h"

#include <algorithm>

namespace pipec {

size_t ScheduleIR::totalOps() const {
  size_t total = 0;
  for (const RankOps &rank : ranks)
    total += rank.ops.size();
  return total;
}

int32_t RankOps::peerOf(uint32_t index) const {
  auto it = std::lower_bound(peers.begin(), peers.end(), index,
                             [](const OpPeer &p, uint32_t i) { return p.op < i; });
  return it != peers.end() && it->op == index ? it->rank : -1;
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
