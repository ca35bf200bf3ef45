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
      int64_t chunks = 0;
      for (int m = 0; m < p.microbatches; ++m)
        chunks = std::max<int64_t>(chunks, l.stagesOn(r, m));
      // A rank's distance from the pipeline's entry: its rank, or for a second
      // flow entering at the other end, the smaller of the two.
      int depth = r;
      for (const FlowLayout &flow : l.flows)
        depth = std::min(depth, flow.stageRank[0] == 0 ? r : l.ranks - 1 - r);
      limit.push_back(slack < 0 ? p.budget
                                : std::min<int64_t>(p.budget, std::max<int64_t>(
                                      chunks, chunks * (l.ranks - depth) + slack)));
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
      available[l.rankOf(0, m)].push_back(p.opId(kF, 0, m));
  }

  int channelOf(int from, int to, int gradient) const {
    return (from * p.layout.ranks + to) * 2 + gradient;
  }
  // The input message of `id` and its channel, or -1 when its inputs are local.
  int inputChannel(int id, int &producer) const {
    const Layout &l = p.layout;
    int kind = p.kindOf(id), s = p.stageOf(id), m = p.mbOf(id), r = l.rankOf(s, m);
    if (kind == kF && s > 0 && l.rankOf(s - 1, m) != r) {
      producer = p.opId(kF, s - 1, m);
      return channelOf(l.rankOf(s - 1, m), r, 0);
    }
    if (kind == kI && s + 1 < l.stages && l.rankOf(s + 1, m) != r) {
      producer = p.opId(kI, s + 1, m);
      return channelOf(l.rankOf(s + 1, m), r, 1);
    }
    return -1;
  }
  double earliestStart(int id) const {
    const Layout &l = p.layout;
    int kind = p.kindOf(id), s = p.stageOf(id), m = p.mbOf(id), r = l.rankOf(s, m);
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
        live[r] + reserved[r] + p.layout.stagesOn(r, m) > limit[r])
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
  // Runs `id` from `start` to `finish`; `entry` is what the rank's order records.
  void commit(int id, double start) { commit(id, start + p.duration(id), id); }
  void commit(int id, double finish, int entry) {
    const Layout &l = p.layout;
    int kind = p.kindOf(id), s = p.stageOf(id), m = p.mbOf(id), r = l.rankOf(s, m);
    end[id] = free[r] = finish;
    orders[r].push_back(entry);
    auto &avail = available[r];
    avail.erase(std::find(avail.begin(), avail.end(), id));
    if (kind == kF) {
      if (!admitted[r][m]) {
        admitted[r][m] = 1;
        reserved[r] += l.stagesOn(r, m);
      }
      --reserved[r];
      ++live[r];
      if (s + 1 < l.stages && l.rankOf(s + 1, m) != r)
        channel[channelOf(r, l.rankOf(s + 1, m), 0)].push_back(id);
    } else if (kind == kI) {
      if (s > 0 && l.rankOf(s - 1, m) != r)
        channel[channelOf(r, l.rankOf(s - 1, m), 1)].push_back(id);
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

// With --overlap: runs `op` (an F or an I that could start at `start`) as a
// pair with an op of the other kind on its rank when that finishes both sooner
// than running them one after the other; returns the ops committed (0: none).
int pairUp(State &state, int op, double start) {
  const SynthProblem &p = state.p;
  int r = p.rankOf(op), want = p.kindOf(op) == kF ? kI : kF;
  int best = -1;
  double bestFinish = 0;
  bool bestWhole = false;
  for (int other : state.available[r]) {
    if (p.kindOf(other) != want || p.mbOf(other) == p.mbOf(op) || !state.allowed(other))
      continue;
    int f = want == kF ? other : op, i = want == kF ? op : other;
    bool whole = p.pairTakesW(f, i);
    double alone = p.duration(f) + p.duration(i) + (whole ? p.duration(p.weightOf(i)) : 0);
    double finish = std::max(start, state.earliestStart(other)) + p.pairDuration(f, i, whole);
    if (finish < start + alone - 1e-9 && (best < 0 || finish < bestFinish - 1e-12))
      best = other, bestFinish = finish, bestWhole = whole;
  }
  if (best < 0)
    return 0;
  int f = want == kF ? best : op, i = want == kF ? op : best;
  state.commit(f, bestFinish, f | SynthProblem::kPaired);
  state.commit(i, bestFinish, i);
  if (bestWhole)
    state.commit(p.weightOf(i), bestFinish, p.weightOf(i));
  return bestWhole ? 3 : 2;
}

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
    if (p.overlap && p.kindOf(bestOp) != kW) {
      int partners = pairUp(state, bestOp, bestStart);
      if (partners) {
        committed += partners;
        continue;
      }
    }
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
