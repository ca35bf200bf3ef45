#include "synth/SearchBound.h"

#include "synth/LowerBound.h"

#include <algorithm>
#include <limits>

namespace pipec::synth {

namespace {

// LowerBound.h's terms, per flow: a rank's work is what every flow brings it;
// it cannot start before the nearest flow's forwards reach it, and after its
// last backward the rest of that flow's backward chain below it must still run.
double flowBound(const SynthProblem &p) {
  const StagePlacement &l = p.layout;
  const StageCosts &c = p.costs;
  std::vector<double> forwardTo(l.stages + 1, 0), inputTo(l.stages + 1, 0),
      backwardTo(l.stages + 1, 0);
  for (int s = 0; s < l.stages; ++s) {
    forwardTo[s + 1] = forwardTo[s] + c.F[s];
    inputTo[s + 1] = inputTo[s] + c.I[s];
    backwardTo[s + 1] = backwardTo[s] + c.I[s] + c.W[s];
  }
  double bound = forwardTo[l.stages] + inputTo[l.stages] + c.W[0];
  constexpr double kNone = std::numeric_limits<double>::infinity();
  for (int r = 0; r < l.ranks; ++r) {
    double head = kNone, tail = kNone, work = 0, forwardAndInput = 0, held = 0;
    for (const FlowPlacement &flow : l.flows) {
      double n = flow.end - flow.begin;
      int s0 = -1;
      for (int s = 0; s < l.stages; ++s) {
        if (flow.stageRank[s] != r)
          continue;
        if (s0 < 0)
          s0 = s;
        work += n * (c.F[s] + c.I[s] + c.W[s]);
        forwardAndInput += n * (c.F[s] + c.I[s]);
        double back = p.split ? inputTo[l.stages] - inputTo[s] + c.W[s]
                              : backwardTo[l.stages] - backwardTo[s];
        held += n * (forwardTo[l.stages] - forwardTo[s] + back);
      }
      if (s0 < 0 || n == 0)
        continue;
      head = std::min(head, forwardTo[s0]);
      tail = std::min(tail, p.split ? (s0 > 0 ? inputTo[s0] + c.W[0] : 0) : backwardTo[s0]);
    }
    if (head == kNone)
      continue;
    double rank = p.split ? head + std::max(work, forwardAndInput + tail) : head + work + tail;
    bound = std::max({bound, rank, held / double(p.budget)});
  }
  return bound;
}

} // namespace

double searchBound(const SynthProblem &problem) {
  SynthProblem relaxed = problem;
  if (problem.overlap) {
    const int S = problem.layout.stages;
    for (int f = 0; f < S; ++f) {
      double save = 0;
      for (int b = 0; b < S; ++b) {
        size_t at = size_t(f) * S + b;
        double F = problem.costs.F[f], I = problem.costs.I[b], W = problem.costs.W[b];
        save = std::max({save, F + I - problem.costs.pairI[at],
                         F + I + W - problem.costs.pairB[at]});
      }
      relaxed.costs.F[f] = std::max(0.0, problem.costs.F[f] - save);
    }
  }
  return relaxed.layout.flows.empty() ? lowerBound(relaxed) : flowBound(relaxed);
}

} // namespace pipec::synth
