#include "synth/SynthWriter.h"

#include "interop/PipeWriter.h"

#include <algorithm>

namespace pipec::synth {

namespace {

const char *kindName(int kind) { return kind == kF ? "F" : kind == kI ? "I" : "W"; }

// A rank's order as program steps: pairs as `F & B` (or `F & I`), and without
// split each I with its W as one B.
std::vector<PipeStep> rankSteps(const SynthProblem &p, const std::vector<int> &order) {
  std::vector<PipeStep> steps;
  auto op = [&](int id, char name) {
    return PipeOp{name, int32_t(p.chunkOf(id)), int64_t(p.mbOf(id))};
  };
  for (size_t i = 0; i < order.size(); ++i) {
    int id = SynthProblem::idOf(order[i]);
    PipeStep step;
    if (SynthProblem::paired(order[i])) {
      int backward = order[i + 1];
      bool whole = i + 2 < order.size() && order[i + 2] == p.weightOf(backward) &&
                   p.pairTakesW(id, backward);
      step.count = 2;
      step.ops[0] = op(id, 'F');
      step.ops[1] = op(backward, whole ? 'B' : 'I');
      i += whole ? 2 : 1;
      steps.push_back(step);
      continue;
    }
    char name = kindName(p.kindOf(id))[0];
    // Without split the search times an I as the whole B (its W takes no
    // time); with split an I sends its gradient before its W runs, which a
    // B would not, so only the former is written as B.
    if (!p.split && p.kindOf(id) == kI && i + 1 < order.size() && order[i + 1] == p.weightOf(id)) {
      name = 'B';
      ++i;
    }
    step.ops[0] = op(id, name);
    steps.push_back(step);
  }
  return steps;
}

} // namespace

std::string writePlacement(const StagePlacement &l) {
  std::string out;
  if (l.flows.empty())
    return out + "  place stage s -> rank " + l.rankExpr + " chunk " + l.chunkExpr + ";\n";
  for (const FlowPlacement &flow : l.flows)
    out += "  flow " + flow.name + ": microbatches " + std::to_string(flow.begin) + ".." +
           std::to_string(flow.end) + " { place stage s -> rank " + flow.rankExpr + " chunk " +
           flow.chunkExpr + "; }\n";
  return out;
}

std::string writeSynthPipe(const SynthProblem &p, const RankOrders &orders,
                           const std::string &name, const std::vector<std::string> &header,
                           bool loops) {
  const StagePlacement &l = p.layout;
  ExplicitSchedule s;
  s.header = header;
  s.name = name;
  s.tool = "pipec synth";
  s.ranks = l.ranks;
  s.stages = l.stages;
  s.microbatches = p.microbatches;
  s.copies = l.copies;
  s.placement = writePlacement(l);
  s.loops = loops;
  for (int r = 0; r < l.ranks; ++r)
    s.programs.push_back(rankSteps(p, orders[r]));
  std::string text;
  llvm::raw_string_ostream out(text);
  writeExplicitSchedule(s, out);
  return out.str();
}

} // namespace pipec::synth
