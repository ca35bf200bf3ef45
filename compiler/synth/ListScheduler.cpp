#include "synth/ListScheduler.h"

#include <algorithm>
#include <limits>
#include <random>

namespace pipec::synth {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

struct State {
  const SynthProblem &p;
  std::vector<double> end;                    // op -> end time, -1 not run
  std::vector<double> free;                   // rank -> free at
  std::vector<int64_t> live, reserved;        // rank -> activations held / promised
  std::vector<std::vector<char>> admitted;    // rank -> mb -> entered
  std::vector<std::vector<int>> channel;      // sent, in order
  std::vector<size_t> consumed;               // per channel
  std::vector<std::vector<int>> available;    // rank -> ops whose inputs are done
  RankOrders orders;

  std::vector<int64_t> limit;                 // rank -> activations it may admit up to

  State(const SynthProblem &problem, int slack) : p(problem) {
    const Layout &l = p.layout;
    for (int r = 0; r < l.ranks; ++r) {
      int64_t chunks = int64_t(l.rankStages[r].size());
      limit.push_back(slack < 0 ? p.budget
                                : std::min<int64_t>(p.budget, std::max<int64_t>(
                                      chunks, chunks * (l.ranks - r) + slack)));
    }
    end.assign(p.numOps(), -1);
    free.assign(l.ranks, 0);
    live.assign(l.ranks, 0);
    reserved.assign(l.ranks, 0);
    admitted.assign(l.ranks, std::vector<char>(p.microbatches, 0));
    channel.assign(size_t(l.ranks) * l.ranks * 2, {});
    consumed.assign(channel.size(), 0);
    available.assign(l.ranks, {});
    orders.assign(l.ranks, {});
    for (int m = 0; m < p.microbatches; ++m)
      available[l.stageRank[0]].push_back(p.opId(kF, 0, m));
  }

  int channelOf(int from, int to, int gradient) const {
    return (from * p.layout.ranks + to) * 2 + gradient;
  }
  // The input message of `id` and its channel, or -1 when its inputs are local.
  int inputChannel(int id, int &producer) const {
    const Layout &l = p.layout;
    int kind = p.kindOf(id), s = p.stageOf(id), m = p.mbOf(id), r = l.stageRank[s];
    if (kind == kF && s > 0 && l.stageRank[s - 1] != r) {
      producer = p.opId(kF, s - 1, m);
      return channelOf(l.stageRank[s - 1], r, 0);
    }
    if (kind == kI && s + 1 < l.stages && l.stageRank[s + 1] != r) {
      producer = p.opId(kI, s + 1, m);
      return channelOf(l.stageRank[s + 1], r, 1);
    }
    return -1;
  }
  double earliestStart(int id) const {
    const Layout &l = p.layout;
    int kind = p.kindOf(id), s = p.stageOf(id), m = p.mbOf(id), r = l.stageRank[s];
    double at = free[r];
    auto input = [&](int dep) {
      double t = end[dep];
      if (p.rankOf(dep) != r)
        t += p.costs.transfer[p.stageOf(dep)];
      at = std::max(at, t);
    };
    if (kind == kF && s > 0) input(p.opId(kF, s - 1, m));
    if (kind == kI) {
      input(p.opId(kF, s, m));
      if (s + 1 < l.stages) input(p.opId(kI, s + 1, m));
    }
    if (kind == kW) input(p.opId(kI, s, m));
    return at;
  }
  bool allowed(int id) const {
    int r = p.rankOf(id), m = p.mbOf(id);
    if (p.kindOf(id) == kF && !admitted[r][m] &&
        live[r] + reserved[r] + int64_t(p.layout.rankStages[r].size()) > limit[r])
      return false;
    int producer;
    int c = inputChannel(id, producer);
    return c < 0 || (consumed[c] < channel[c].size() && channel[c][consumed[c]] == producer);
  }
  // The ops `id` completes the inputs of, once it has run.
  void release(int id) {
    const Layout &l = p.layout;
    int kind = p.kindOf(id), s = p.stageOf(id), m = p.mbOf(id);
    auto add = [&](int op) { available[p.rankOf(op)].push_back(op); };
    if (kind == kF) {
      if (s + 1 < l.stages) add(p.opId(kF, s + 1, m));
      if (s + 1 == l.stages || end[p.opId(kI, s + 1, m)] >= 0) add(p.opId(kI, s, m));
    } else if (kind == kI) {
      add(p.opId(kW, s, m));
      if (s > 0 && end[p.opId(kF, s - 1, m)] >= 0) add(p.opId(kI, s - 1, m));
    }
  }
  void commit(int id, double start) {
    const Layout &l = p.layout;
    int kind = p.kindOf(id), s = p.stageOf(id), m = p.mbOf(id), r = l.stageRank[s];
    end[id] = free[r] = start + p.duration(id);
    orders[r].push_back(id);
    auto &avail = available[r];
    avail.erase(std::find(avail.begin(), avail.end(), id));
    if (kind == kF) {
      if (!admitted[r][m]) {
        admitted[r][m] = 1;
        reserved[r] += int64_t(l.rankStages[r].size());
      }
      --reserved[r];
      ++live[r];
      if (s + 1 < l.stages && l.stageRank[s + 1] != r)
        channel[channelOf(r, l.stageRank[s + 1], 0)].push_back(id);
    } else if (kind == kI) {
      if (s > 0 && l.stageRank[s - 1] != r)
        channel[channelOf(r, l.stageRank[s - 1], 1)].push_back(id);
    } else {
      --live[r];
    }
    int producer;
    int c = inputChannel(id, producer);
    if (c >= 0)
      ++consumed[c];
    release(id);
  }
};

} // namespace

std::optional<RankOrders> listSchedule(const SynthProblem &p, const ListVariant &variant) {
  State state(p, variant.slack);
  const Layout &l = p.layout;
  int rankOfKind[3];
  for (int i = 0; i < 3; ++i)
    rankOfKind[variant.order[i]] = i;
  std::mt19937_64 rng(variant.noise);
  std::vector<uint32_t> jitter(p.numOps(), 0);
  if (variant.noise)
    for (uint32_t &j : jitter)
      j = uint32_t(rng() % 4); // small: reorders near-equal choices only
  // A smaller key is preferred.
  auto key = [&](int id) {
    int kind = p.kindOf(id), s = p.stageOf(id), m = p.mbOf(id);
    int64_t within = kind == kF && variant.depthFirst ? int64_t(l.stages - s) * p.microbatches + m
                     : kind == kF                     ? int64_t(m) * l.stages + s
                                                      : int64_t(m) * l.stages + (l.stages - s);
    return (int64_t(rankOfKind[kind]) << 40) + (int64_t(jitter[id]) << 32) + within;
  };
  std::vector<double> meanOp(l.ranks, 0);
  for (int r = 0; r < l.ranks; ++r) {
    for (int s : l.rankStages[r])
      meanOp[r] += p.costs.F[s] + p.costs.I[s] + p.costs.W[s];
    meanOp[r] /= 3.0 * std::max<size_t>(1, l.rankStages[r].size());
  }
  int total = p.numOps();
  for (int committed = 0; committed < total;) {
    int bestOp = -1;
    double bestStart = 0;
    for (int r = 0; r < l.ranks; ++r) {
      double first = kNever;
      for (int id : state.available[r])
        if (state.allowed(id))
          first = std::min(first, state.earliestStart(id));
      if (first == kNever)
        continue;
      int choice = -1;
      double start = 0;
      for (int id : state.available[r]) {
        if (!state.allowed(id))
          continue;
        double at = state.earliestStart(id);
        if (at > first + variant.window * meanOp[r] + 1e-9)
          continue;
        if (choice < 0 || key(id) < key(choice))
          choice = id, start = at;
      }
      if (bestOp < 0 || start < bestStart - 1e-12)
        bestOp = choice, bestStart = start;
    }
    if (bestOp < 0)
      return std::nullopt; // stuck: nothing can run within the budget
    state.commit(bestOp, bestStart);
    ++committed;
    if (!p.split && p.kindOf(bestOp) == kI) { // a B: its W at once
      int w = p.weightOf(bestOp);
      state.commit(w, state.earliestStart(w));
      ++committed;
    }
  }
  return std::move(state.orders);
}

} // namespace pipec::synth
