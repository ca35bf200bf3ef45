// Why each term holds, for rank r with lowest stage s0:
//   head: no op of r runs before F(s, 0..) of its first stage s can, which needs
//     F of every earlier stage of some micro-batch: at least sum F[t < s].
//   work: r runs every op of its stages once: M * sum (F + I + W).
//   tail: r's last I (on some stage s >= s0) ends after head plus all of r's F
//     and I; after it, that micro-batch's I must still run on every stage below
//     s and W on stage 0: at least sum I[t < s0] + W[0] when s0 > 0. Without
//     split, each of those is a whole B, and r's last B ends after all its work.
//   budget: stage s's activations of micro-batch m stay on its rank from the
//     start of F(s, m) to the end of its W (or B): at least the forwards from s
//     to the last stage, the backward chain back to s (I's, or whole B's without
//     split) and W[s]. The rank holds at most `budget` of them at any time, so
//     makespan * budget >= M * the sum of those spans over its stages.
#include "synth/LowerBound.h"

#include <algorithm>
#include <limits>

namespace pipec::synth {

double lowerBound(const SynthProblem &p) {
  const Layout &l = p.layout;
  const StageCosts &c = p.costs;
  double M = p.microbatches, bound = 0;
  std::vector<double> forwardTo(l.stages + 1, 0), backwardTo(l.stages + 1, 0),
      inputTo(l.stages + 1, 0);
  for (int s = 0; s < l.stages; ++s) {
    forwardTo[s + 1] = forwardTo[s] + c.F[s];
    inputTo[s + 1] = inputTo[s] + c.I[s];
    backwardTo[s + 1] = backwardTo[s] + c.I[s] + c.W[s];
  }
  // One micro-batch alone: down through every stage and back.
  bound = forwardTo[l.stages] + inputTo[l.stages] + c.W[0];
  for (int r = 0; r < l.ranks; ++r) {
    const std::vector<int> &stages = l.rankStages[r];
    if (stages.empty())
      continue;
    int s0 = *std::min_element(stages.begin(), stages.end());
    double head = forwardTo[s0], forwardAndInput = 0, work = 0;
    for (int s : stages) {
      forwardAndInput += M * (c.F[s] + c.I[s]);
      work += M * (c.F[s] + c.I[s] + c.W[s]);
    }
    double rank;
    if (p.split)
      rank = head + std::max(work, forwardAndInput + (s0 > 0 ? inputTo[s0] + c.W[0] : 0));
    else
      rank = head + work + backwardTo[s0];
    bound = std::max(bound, rank);
    double held = 0;
    for (int s : stages) {
      double back = p.split ? inputTo[l.stages] - inputTo[s] + c.W[s]
                            : backwardTo[l.stages] - backwardTo[s];
      held += forwardTo[l.stages] - forwardTo[s] + back;
    }
    bound = std::max(bound, M * held / double(p.budget));
  }
  return bound;
}

} // namespace pipec::synth
