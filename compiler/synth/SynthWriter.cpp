#include "synth/SynthWriter.h"

#include <algorithm>

namespace pipec::synth {

namespace {

// One step of a rank's program: an op, or a pair (two ops).
struct Step {
  int count = 1;
  char kind[2] = {'F', 'F'};
  int chunk[2] = {0, 0}, mb[2] = {0, 0};

  // `next` is this step one micro-batch later (a loop's next iteration).
  bool followedBy(const Step &next, int by) const {
    for (int k = 0; k < count; ++k)
      if (next.kind[k] != kind[k] || next.chunk[k] != chunk[k] || next.mb[k] != mb[k] + by)
        return false;
    return next.count == count;
  }
  std::string text(const char *loop = nullptr) const {
    std::string out;
    for (int k = 0; k < count; ++k) {
      std::string m = std::to_string(mb[k]);
      if (loop)
        m = mb[k] == 0 ? loop : std::string(loop) + " + " + m;
      out += std::string(k ? " & " : "") + kind[k] + "(" + std::to_string(chunk[k]) +
             ", mb = " + m + ")";
    }
    return out;
  }
};

const char *kindName(int kind) { return kind == kF ? "F" : kind == kI ? "I" : "W"; }

std::vector<Step> rankSteps(const SynthProblem &p, const std::vector<int> &order) {
  std::vector<Step> steps;
  auto op = [&](Step &step, int k, int id, char name) {
    step.kind[k] = name;
    step.chunk[k] = p.chunkOf(id);
    step.mb[k] = p.mbOf(id);
  };
  for (size_t i = 0; i < order.size(); ++i) {
    int id = SynthProblem::idOf(order[i]);
    Step step;
    if (SynthProblem::paired(order[i])) {
      int backward = order[i + 1];
      bool whole = i + 2 < order.size() && order[i + 2] == p.weightOf(backward) &&
                   p.pairTakesW(id, backward);
      step.count = 2;
      op(step, 0, id, 'F');
      op(step, 1, backward, whole ? 'B' : 'I');
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
    op(step, 0, id, name);
    steps.push_back(step);
  }
  return steps;
}

// A rank's program with runs written as loops: a body of up to four steps
// that repeats with every micro-batch one higher becomes
// `for i in 0..n { F(0, mb = i + 3); B(0, mb = i); }`.
std::string writeProgram(const std::vector<Step> &steps, const std::string &indent) {
  constexpr int kMaxBody = 4, kMinCovered = 4;
  std::string out;
  for (size_t at = 0; at < steps.size();) {
    size_t bestBody = 0, bestRepeats = 0;
    for (size_t body = 1; body <= kMaxBody && at + 2 * body <= steps.size(); ++body) {
      size_t repeats = 1;
      while (at + (repeats + 1) * body <= steps.size()) {
        bool same = true;
        for (size_t k = 0; same && k < body; ++k)
          same = steps[at + k].followedBy(steps[at + repeats * body + k], int(repeats));
        if (!same)
          break;
        ++repeats;
      }
      if (repeats >= 2 && repeats * body >= kMinCovered &&
          repeats * body > bestRepeats * bestBody)
        bestBody = body, bestRepeats = repeats;
    }
    if (!bestBody) {
      out += indent + steps[at].text() + ";\n";
      ++at;
      continue;
    }
    out += indent + "for i in 0.." + std::to_string(bestRepeats) + " {";
    if (bestBody == 1) {
      out += " " + steps[at].text("i") + "; }\n";
    } else {
      out += "\n";
      for (size_t k = 0; k < bestBody; ++k)
        out += indent + "  " + steps[at + k].text("i") + ";\n";
      out += indent + "}\n";
    }
    at += bestBody * bestRepeats;
  }
  return out;
}

} // namespace

std::vector<std::string> writeRankSteps(const SynthProblem &p, const std::vector<int> &order) {
  std::vector<std::string> out;
  for (const Step &step : rankSteps(p, order))
    out.push_back(step.text());
  return out;
}

std::string writePlacement(const StagePlacement &l) {
  std::string out;
  if (l.copies > 1)
    out += "  copies " + std::to_string(l.copies) + ";\n";
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
    std::vector<Step> steps = rankSteps(p, orders[r]);
    if (loops) {
      out += writeProgram(steps, "    ");
    } else {
      for (const Step &step : steps)
        out += "    " + step.text() + ";\n";
    }
    out += "  }\n";
  }
  out += "}\n";
  return out;
}

} // namespace pipec::synth
