#include "synth/SearchBound.h"

#include "synth/LowerBound.h"

#include <algorithm>
#include <cmath>
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

// With pairs, the bound is taken over relaxed costs F' <= F, I' <= I, W' <= W
// with F'(f) + I'(b) <= pairI(f, b) and F'(f) + I'(b) + W'(b) <= pairB(f, b)
// for every pair: then every op, alone or in a pair, takes at least its relaxed
// time, so every term of the bound still holds. The saving of a pair comes off
// the forward first; when a pair saves more than its forward (a pair cheaper
// than its backward alone, as when the costs say W > B), the rest comes off
// the input gradient, then the weight gradient. Without that last step the
// "bound" could exceed the makespan (issue 26: 800 against 520).
void relaxForPairs(const SynthProblem &problem, StageCosts &relaxed) {
  const StageCosts &c = problem.costs;
  const int S = problem.layout.stages;
  for (int f = 0; f < S; ++f) {
    double save = 0;
    for (int b = 0; b < S; ++b) {
      size_t at = size_t(f) * S + b;
      save = std::max({save, c.F[f] + c.I[b] - c.pairI[at], c.F[f] + c.I[b] + c.W[b] - c.pairB[at]});
    }
    relaxed.F[f] = std::max(0.0, c.F[f] - save);
  }
  for (int b = 0; b < S; ++b)
    for (int f = 0; f < S; ++f) {
      size_t at = size_t(f) * S + b;
      relaxed.I[b] = std::max(0.0, std::min(relaxed.I[b], c.pairI[at] - relaxed.F[f]));
      relaxed.I[b] = std::max(0.0, std::min(relaxed.I[b], c.pairB[at] - relaxed.F[f]));
    }
  for (int b = 0; b < S; ++b)
    for (int f = 0; f < S; ++f) {
      size_t at = size_t(f) * S + b;
      relaxed.W[b] =
          std::max(0.0, std::min(relaxed.W[b], c.pairB[at] - relaxed.F[f] - relaxed.I[b]));
    }
}

double searchBound(const SynthProblem &problem) {
  SynthProblem relaxed = problem;
  if (problem.overlap)
    relaxForPairs(problem, relaxed.costs);
  double bound = relaxed.layout.flows.empty() ? lowerBound(relaxed) : flowBound(relaxed);
  return std::isfinite(bound) ? bound : 0; // not finite: nothing proven, none reported
}

} // namespace pipec::synth
