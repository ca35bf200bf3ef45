#include "synth/LocalSearch.h"

#include "synth/ChannelRepair.h"

#include <algorithm>
#include <cstring>
#include <random>

namespace pipec::synth {

namespace {

// The steps of a rank's order: a unit is one op, an I with its W without
// split, or a pair with its backward (and that backward's W when the pair takes it).
struct Units {
  const SynthProblem &p;

  // The first index of the unit holding `index`.
  size_t begin(const std::vector<int> &order, size_t index) const {
    int id = SynthProblem::idOf(order[index]);
    if (p.kindOf(id) == kW && index > 0 && order[index - 1] == p.opId(kI, p.stageOf(id), p.mbOf(id)) &&
        (!p.split || (index > 1 && SynthProblem::paired(order[index - 2]) &&
                      p.pairTakesW(SynthProblem::idOf(order[index - 2]), order[index - 1]))))
      --index, id = order[index];
    if (p.kindOf(id) == kI && index > 0 && SynthProblem::paired(order[index - 1]))
      --index;
    return index;
  }
  size_t length(const std::vector<int> &order, size_t begin) const {
    int entry = order[begin], id = SynthProblem::idOf(entry);
    size_t n = 1;
    if (SynthProblem::paired(entry) && begin + 1 < order.size()) {
      n = 2;
      int backward = order[begin + 1];
      if (begin + 2 < order.size() && order[begin + 2] == p.weightOf(backward) &&
          p.pairTakesW(id, backward))
        n = 3;
    } else if (!p.split && p.kindOf(id) == kI) {
      n = 2;
    }
    return std::min(n, order.size() - begin);
  }
  // Whether inserting at `to` would cut a unit of `order` in two.
  bool inside(const std::vector<int> &order, size_t to) const {
    return to > 0 && to < order.size() && begin(order, to) != to;
  }
};

// Moves the block [from, from + length) of `order` so that it starts at `to`
// (an index in the order without the block); false (order unchanged) when
// that place is inside another unit.
bool moveBlock(const Units &units, std::vector<int> &order, size_t from, size_t length,
               size_t to) {
  std::vector<int> block(order.begin() + from, order.begin() + from + length);
  order.erase(order.begin() + from, order.begin() + from + length);
  if (units.inside(order, to)) {
    order.insert(order.begin() + from, block.begin(), block.end());
    return false;
  }
  order.insert(order.begin() + to, block.begin(), block.end());
  return true;
}

// One random move on `order` (rank r of the candidate); false when none was made.
bool randomMove(const SynthProblem &p, const Units &units, std::vector<int> &order,
                std::mt19937_64 &rng) {
  if (order.size() < 2)
    return false;
  size_t from = units.begin(order, rng() % order.size());
  size_t length = units.length(order, from);
  int entry = order[from], id = SynthProblem::idOf(entry), kind = p.kindOf(id);
  if (p.overlap && kind == kF && rng() % 4 == 0) {
    if (SynthProblem::paired(entry)) { // split the pair, the forward first
      order[from] = id;
      return true;
    }
    // Pair it with an I of another micro-batch nearby: the F goes right before it.
    long reach = 2 + long(rng() % 8);
    long target = std::clamp<long>(long(from) + long(rng() % (2 * reach + 1)) - reach, 0,
                                   long(order.size()) - 1);
    size_t at = size_t(target);
    if (SynthProblem::paired(order[at]) || p.kindOf(SynthProblem::idOf(order[at])) != kI ||
        p.mbOf(order[at]) == p.mbOf(id) || (at > 0 && SynthProblem::paired(order[at - 1])))
      return false;
    order.erase(order.begin() + from);
    if (at > from)
      --at;
    order.insert(order.begin() + at, id | SynthProblem::kPaired);
    return true;
  }
  size_t rest = order.size() - length;
  size_t to;
  if (p.split && kind == kW && length == 1 && rng() % 3 == 0) {
    // Merge: right after its I.
    size_t i = std::find(order.begin(), order.end(), p.opId(kI, p.stageOf(id), p.mbOf(id))) -
               order.begin();
    if (i == order.size())
      return false;
    to = i < from ? i + 1 : i;
  } else {
    // A near move most of the time, anywhere sometimes.
    long reach = long(std::min<size_t>(rest, 2 + rng() % 6));
    long target = rng() % 4 == 0 ? long(rng() % (rest + 1))
                                 : long(from) + long(rng() % (2 * reach + 1)) - reach;
    to = size_t(std::clamp<long>(target, 0, long(rest)));
  }
  if (to == from)
    return false;
  return moveBlock(units, order, from, length, to);
}

} // namespace

double localSearch(const SynthProblem &p, RankOrders &orders, double span, double bound,
                   std::chrono::steady_clock::time_point deadline, SearchStats &stats,
                   const std::function<void(double)> &progress) {
  CandidateEvaluator evaluator(p);
  Units units{p};
  std::mt19937_64 rng(p.seed * 0x9E3779B97F4A7C15ull + 1);
  // `current` walks (plateaus, kicks); `orders` keeps the best seen.
  RankOrders current = orders, candidate = orders;
  evaluator.makespan(current);
  double currentSpan = span, currentSum = evaluator.rankEndSum();
  double best = span;
  const int repairPasses = 2 * p.layout.stages + 2;
  // A walk that finds nothing better for this many moves restarts from the
  // best so far, kicked by a few random feasible moves taken whatever they cost.
  const uint64_t stall = 1500 + 40 * uint64_t(p.layout.ranks);
  uint64_t sinceBetter = 0;
  int kicks = 0;
  auto done = [&] { return best <= bound + 1e-12 * std::max(1.0, bound); };
  for (uint64_t it = 0; it < p.iterations && !done(); ++it) {
    if (std::chrono::steady_clock::now() > deadline) { // each move may re-simulate and repair
      stats.timedOut = true;
      break;
    }
    if (sinceBetter > stall) {
      current = candidate = orders;
      evaluator.makespan(current);
      currentSpan = best;
      currentSum = evaluator.rankEndSum();
      kicks = 2 + int(rng() % 4);
      sinceBetter = 0;
    }
    size_t r = rng() % current.size();
    if (!randomMove(p, units, candidate[r], rng))
      continue;
    ++stats.tried;
    double next = evaluator.makespan(candidate);
    bool repaired = false;
    if (next == kInfeasible && std::strcmp(evaluator.why(), kChannelOrder) == 0) {
      // Keep the move and make the other ranks receive in its order.
      repaired = repairChannels(p, candidate, repairPasses);
      next = repaired ? evaluator.makespan(candidate) : kInfeasible;
    }
    if (next != kInfeasible)
      ++stats.feasible;
    double sum = evaluator.rankEndSum();
    // The makespan first, then the sum of the ranks' ends; equal is accepted
    // so the walk can cross plateaus.
    bool accept = next < currentSpan || (next == currentSpan && sum <= currentSum);
    bool kick = !accept && next != kInfeasible && kicks > 0;
    if (accept || kick) {
      if (kick)
        --kicks;
      currentSpan = next;
      currentSum = sum;
      if (repaired)
        current = candidate;
      else
        current[r] = candidate[r];
      if (next < best) {
        best = next;
        orders = current;
        ++stats.improved;
        progress(next);
        sinceBetter = 0;
        continue;
      }
    } else if (repaired) {
      candidate = current;
    } else {
      candidate[r] = current[r];
    }
    ++sinceBetter;
  }
  return best;
}

} // namespace pipec::synth
