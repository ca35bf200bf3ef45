// Why each term holds. For one micro-batch, head(op) is the earliest its op
// can start (the chain of forwards, then of I, that it waits for, with a
// transfer wherever the chain changes rank) and tail(op) the least that must
// still run after it ends (the chain of its successors, likewise). Both hold
// for every micro-batch, since all have the same costs. Without split an I
// stands for the whole B and its W takes no time.
//   path: any op ends at or after head + its duration, and its tail follows:
//     head + duration + tail of F on stage 0 is one micro-batch's round trip.
//   rank: pick any set C of op kinds (F, I or W of one stage) on a rank. Its
//     M * |C| ops run one at a time on that rank, none before min head over C,
//     and after the last of them ends at least min tail over C must still run:
//     makespan >= min head + M * sum duration + min tail. Taking C as the
//     classes with head >= h and tail >= q, over every h and q of the rank's
//     classes, covers the best warm-up (a rank holding a late stage waits for
//     it) and cool-down (an early I still has its chain back to stage 0).
//   window: before the rank's earliest I can start (min headI), it runs only
//     forwards, and at most B of them (each stays until its W, after that
//     moment), so at most min(that wait, the B longest forwards) of its work
//     is done by then; the rest of its work follows.
//   budget: the activations of stage s for micro-batch m stay on the rank from
//     the start of F(s, m) to the end of W(s, m), at least held(s) = the round
//     trip from F(s) down to the last stage and back to I(s), plus W(s). The
//     rank holds at most B = budget of them at any moment (a forward counts
//     from its start: the checker counts it once it runs), and none before its
//     lowest stage's head h0. So the total held time, M * sum held(s), is at
//     most B * (makespan - h0). Also, these k*M intervals (k stages on the
//     rank) never overlap more than B deep, so they split into B chains of
//     disjoint intervals; one chain has at least ceil(k*M / B) of them, each
//     at least min held(s) long: makespan >= h0 + ceil(kM / B) * min held. At
//     one stage per rank that is M / B round trips through the rank.
#include "synth/LowerBound.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace pipec::synth {

namespace {

struct OpClass {
  double head, duration, tail;
};

} // namespace

double lowerBound(const SynthProblem &p) {
  const StagePlacement &l = p.layout;
  const StageCosts &c = p.costs;
  const int S = l.stages;
  const double M = p.microbatches;
  // The transfer after stage s's op when its consumer is on another rank.
  auto down = [&](int s) { return l.stageRank[s + 1] != l.stageRank[s] ? c.transfer[s] : 0.0; };
  auto up = [&](int s) { return l.stageRank[s - 1] != l.stageRank[s] ? c.transfer[s] : 0.0; };
  std::vector<double> headF(S), headI(S), tailF(S), tailI(S);
  for (int s = 0; s < S; ++s)
    headF[s] = s == 0 ? 0 : headF[s - 1] + c.F[s - 1] + down(s - 1);
  for (int s = S - 1; s >= 0; --s)
    headI[s] = s == S - 1 ? headF[s] + c.F[s] : headI[s + 1] + c.I[s + 1] + up(s + 1);
  for (int s = 0; s < S; ++s)
    tailI[s] = std::max(c.W[s], s == 0 ? 0 : up(s) + c.I[s - 1] + tailI[s - 1]);
  for (int s = S - 1; s >= 0; --s)
    tailF[s] = std::max(c.I[s] + tailI[s], s == S - 1 ? 0 : down(s) + c.F[s + 1] + tailF[s + 1]);

  double bound = c.F[0] + tailF[0];
  std::vector<OpClass> classes;
  for (int r = 0; r < l.ranks; ++r) {
    const std::vector<int> &stages = l.rankStages[r];
    if (stages.empty())
      continue;
    classes.clear();
    double firstHead = headF[stages.front()], held = 0, shortestHeld = -1;
    for (int s : stages) {
      classes.push_back({headF[s], c.F[s], tailF[s]});
      classes.push_back({headI[s], c.I[s], tailI[s]});
      if (c.W[s] > 0)
        classes.push_back({headI[s] + c.I[s], c.W[s], 0});
      firstHead = std::min(firstHead, headF[s]);
      double span = headI[s] - headF[s] + c.I[s] + c.W[s];
      held += span;
      shortestHeld = shortestHeld < 0 ? span : std::min(shortestHeld, span);
    }
    for (const OpClass &h : classes)
      for (const OpClass &q : classes) {
        double work = 0;
        bool any = false;
        for (const OpClass &k : classes)
          if (k.head >= h.head && k.tail >= q.tail)
            work += k.duration, any = true;
        if (any)
          bound = std::max(bound, h.head + M * work + q.tail);
      }
    double firstBackward = headI[stages.front()], allWork = 0;
    std::vector<double> forwards;
    for (int s : stages) {
      firstBackward = std::min(firstBackward, headI[s]);
      allWork += M * (c.F[s] + c.I[s] + c.W[s]);
      forwards.push_back(c.F[s]);
    }
    std::sort(forwards.rbegin(), forwards.rend());
    double room = 0;
    for (int64_t k = 0; k < std::min<int64_t>(p.budget, int64_t(M) * int64_t(stages.size())); ++k)
      room += forwards[size_t(k / p.microbatches)];
    bound = std::max(bound, firstBackward + allWork - std::min(firstBackward - firstHead, room));
    double budget = double(p.budget), units = M * double(stages.size());
    bound = std::max(bound, firstHead + M * held / budget);
    bound = std::max(bound, firstHead + std::ceil(units / budget) * shortestHeld);
  }
  return bound;
}

} // namespace pipec::synth
