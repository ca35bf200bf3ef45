#include "synth/SynthWriter.h"

namespace pipec::synth {

namespace {

std::string opText(const SynthProblem &p, int id, const char *name) {
  return std::string(name) + "(" + std::to_string(p.chunkOf(id)) +
         ", mb = " + std::to_string(p.mbOf(id)) + ")";
}

const char *kindName(int kind) { return kind == kF ? "F" : kind == kI ? "I" : "W"; }

} // namespace

std::vector<std::string> writeRankSteps(const SynthProblem &p, const std::vector<int> &order) {
  std::vector<std::string> steps;
  for (size_t i = 0; i < order.size(); ++i) {
    int id = SynthProblem::idOf(order[i]);
    if (SynthProblem::paired(order[i])) {
      int backward = order[i + 1];
      bool whole = i + 2 < order.size() && order[i + 2] == p.weightOf(backward) &&
                   p.pairTakesW(id, backward);
      steps.push_back(opText(p, id, "F") + " & " + opText(p, backward, whole ? "B" : "I"));
      i += whole ? 2 : 1;
      continue;
    }
    const char *op = kindName(p.kindOf(id));
    // Without split the search times an I as the whole B (its W takes no
    // time); with split an I sends its gradient before its W runs, which a
    // B would not, so only the former is written as B.
    if (!p.split && p.kindOf(id) == kI && i + 1 < order.size() && order[i + 1] == p.weightOf(id)) {
      op = "B";
      ++i;
    }
    steps.push_back(opText(p, id, op));
  }
  return steps;
}

std::string writePlacement(const Layout &l) {
  std::string out;
  if (l.copies > 1)
    out += "  copies " + std::to_string(l.copies) + ";\n";
  if (l.flows.empty())
    return out + "  place stage s -> rank " + l.rankExpr + " chunk " + l.chunkExpr + ";\n";
  for (const FlowLayout &flow : l.flows)
    out += "  flow " + flow.name + ": microbatches " + std::to_string(flow.begin) + ".." +
           std::to_string(flow.end) + " { place stage s -> rank " + flow.rankExpr + " chunk " +
           flow.chunkExpr + "; }\n";
  return out;
}

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
  out += writePlacement(l);
  for (int r = 0; r < l.ranks; ++r) {
    out += "\n  rank " + std::to_string(r) + " {\n";
    for (const std::string &step : writeRankSteps(p, orders[r]))
      out += "    " + step + ";\n";
    out += "  }\n";
  }
  out += "}\n";
  return out;
}

} // namespace pipec::synth
