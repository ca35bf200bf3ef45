#include "synth/SynthWriter.h"

#include <cmath>

namespace pipec::synth {

std::string writeSynthPipe(const SynthProblem &p, const RankOrders &orders,
                           const std::string &name, const std::vector<std::string> &header,
                           const std::vector<double> &backwardCost) {
  const Layout &l = p.layout;
  std::string out;
  for (const std::string &line : header)
    out += "// " + line + "\n";
  out += "schedule " + name + "() {\n";
  out += "  ranks " + std::to_string(l.ranks) + ";\n";
  out += "  stages " + std::to_string(l.stages) + ";\n";
  out += "  microbatches " + std::to_string(p.microbatches) + ";\n";
  out += "  place stage s -> rank " + l.rankExpr + " chunk " + l.chunkExpr + ";\n";
  const int wOffset = p.opId(kW, 0, 0);
  for (int r = 0; r < l.ranks; ++r) {
    out += "\n  rank " + std::to_string(r) + " {\n";
    const std::vector<int> &order = orders[r];
    for (size_t i = 0; i < order.size(); ++i) {
      int id = order[i], kind = p.kindOf(id), s = p.stageOf(id);
      const char *op = kind == kF ? "F" : kind == kI ? "I" : "W";
      // A B is its I and W back to back, when it takes their time.
      if (kind == kI && i + 1 < order.size() && order[i + 1] == id + wOffset &&
          std::fabs(backwardCost[s] - (p.costs.I[s] + p.costs.W[s])) <= 1e-12) {
        op = "B";
        ++i;
      }
      out += "    " + std::string(op) + "(" + std::to_string(l.stageChunk[s]) +
             ", mb = " + std::to_string(p.mbOf(id)) + ");\n";
    }
    out += "  }\n";
  }
  out += "}\n";
  return out;
}

} // namespace pipec::synth
