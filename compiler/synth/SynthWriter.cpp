#include "synth/SynthWriter.h"

namespace pipec::synth {

std::string writeSynthPipe(const SynthProblem &p, const RankOrders &orders,
                           const std::string &name, const std::vector<std::string> &header) {
  const Layout &l = p.layout;
  std::string out;
  for (const std::string &line : header)
    out += "// " + line + "\n";
  out += "schedule " + name + "() {\n";
  out += "  ranks " + std::to_string(l.ranks) + ";\n";
  out += "  stages " + std::to_string(l.stages) + ";\n";
  out += "  microbatches " + std::to_string(p.microbatches) + ";\n";
  out += "  place stage s -> rank " + l.rankExpr + " chunk " + l.chunkExpr + ";\n";
  for (int r = 0; r < l.ranks; ++r) {
    out += "\n  rank " + std::to_string(r) + " {\n";
    const std::vector<int> &order = orders[r];
    for (size_t i = 0; i < order.size(); ++i) {
      int id = order[i], kind = p.kindOf(id), s = p.stageOf(id);
      const char *op = kind == kF ? "F" : kind == kI ? "I" : "W";
      // Without split the search times an I as the whole B (its W takes no
      // time); with split an I sends its gradient before its W runs, which a
      // B would not, so only the former is written as B.
      if (!p.split && kind == kI && i + 1 < order.size() && order[i + 1] == p.weightOf(id)) {
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
