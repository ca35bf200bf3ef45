#include "synth/LocalSearch.h"

#include <algorithm>
#include <random>

namespace pipec::synth {

namespace {

// Moves the block [from, from + length) of `order` so that it starts at `to`
// (an index in the order without the block).
void moveBlock(std::vector<int> &order, size_t from, size_t length, size_t to) {
  std::vector<int> block(order.begin() + from, order.begin() + from + length);
  order.erase(order.begin() + from, order.begin() + from + length);
  order.insert(order.begin() + to, block.begin(), block.end());
}

} // namespace

double localSearch(const SynthProblem &p, RankOrders &orders, double span, double bound,
                   std::chrono::steady_clock::time_point deadline, SearchStats &stats,
                   const std::function<void(double)> &progress) {
  Evaluator evaluator(p);
  std::mt19937_64 rng(p.seed * 0x9E3779B97F4A7C15ull + 1);
  RankOrders candidate = orders;
  evaluator.makespan(orders);
  double spanSum = evaluator.rankEndSum();
  for (uint64_t it = 0; it < p.iterations && span > bound + 1e-12 * std::max(1.0, bound); ++it) {
    if ((it & 63) == 0 && std::chrono::steady_clock::now() > deadline) {
      stats.timedOut = true;
      break;
    }
    size_t r = rng() % orders.size();
    std::vector<int> &order = candidate[r];
    if (order.size() < 2)
      continue;
    size_t from = rng() % order.size();
    int id = order[from];
    int kind = p.kindOf(id);
    size_t length = 1;
    if (!p.split && kind == kW)
      continue; // moved with its I
    if (!p.split && kind == kI)
      length = 2;
    size_t rest = order.size() - length;
    size_t to;
    if (p.split && kind == kW && rng() % 3 == 0) {
      // Merge: right after its I.
      size_t i = std::find(order.begin(), order.end(), id - (p.weightOf(0))) - order.begin();
      to = i < from ? i + 1 : i;
    } else {
      // A near move most of the time, anywhere sometimes.
      long span = long(std::min<size_t>(rest, 2 + rng() % 6));
      long target = rng() % 4 == 0 ? long(rng() % (rest + 1))
                                   : long(from) + long(rng() % (2 * span + 1)) - span;
      to = size_t(std::clamp<long>(target, 0, long(rest)));
    }
    if (to == from)
      continue;
    moveBlock(order, from, length, to);
    ++stats.tried;
    double next = evaluator.makespan(candidate);
    if (next != kInfeasible)
      ++stats.feasible;
    // The makespan first, then the sum of the ranks' ends; equal is accepted
    // so the walk can cross plateaus.
    double sum = evaluator.rankEndSum();
    if (next < span || (next == span && sum <= spanSum)) {
      if (next < span) {
        ++stats.improved;
        progress(next);
      }
      span = next;
      spanSum = sum;
      orders[r] = order;
    } else {
      order = orders[r];
    }
  }
  return span;
}

} // namespace pipec::synth
