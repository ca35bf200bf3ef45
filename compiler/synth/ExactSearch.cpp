// Branch and bound in start-time order. A node is a prefix of a schedule: ops
// placed on their ranks, each at the earliest time its rank and inputs allow.
// A child appends one op whose inputs are placed. Every set of per-rank orders
// that runs has one such timing, and listing its ops by (start, rank) gives a
// path from the root, so the tree covers every schedule. Branches are cut by:
//   - order: an op may not start before the last one placed (nothing would
//     place it later), nor at the same time on a lower rank, unless some op
//     plus its message can take no time (then equal starts need both orders);
//   - micro-batch symmetry: micro-batches are alike, so every stage's
//     forwards are taken in micro-batch order (see below);
//   - W symmetry: two W of one stage whose I are done can swap places without
//     changing any time, so the one of the lower micro-batch goes first;
//   - idle gaps: an op that sends nothing and frees or keeps memory (a W, or
//     an I whose gradient stays on its rank) that fits in the idle time before
//     the op being placed could run there instead, delaying nothing and
//     holding no more memory, so placing the op after such a gap is cut;
//   - bounds: a node whose lower bound (below) is not below the best makespan
//     found is cut.
// Why the cuts keep an optimum: take an optimal schedule and rename its
// micro-batches so the first stage's forwards run in order. Then, stage by
// stage: if F(s, b) runs before F(s, a), a < b, while a's input had already
// arrived (it has, when the stage before runs them in order: a channel
// delivers in order), let a and b trade roles from there on (F of stage s
// and later, every I and W); each op keeps its time and place, so the
// schedule is as good, and stages before s keep their order. Last, apply the
// moves above (moving an op into a gap, which lowers the sum of start times
// and raises none; swapping two W, which keeps it and sorts them) while any
// applies. Each move keeps it optimal and within its budget, and the moves
// stop, so some optimal schedule breaks no rule; its path is never cut.
#include "synth/ExactSearch.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>

namespace pipec::synth {

namespace {

constexpr double kNone = std::numeric_limits<double>::infinity();

class BranchAndBound {
public:
  BranchAndBound(const SynthProblem &p, std::chrono::steady_clock::time_point deadline)
      : p_(p), deadline_(deadline) {
    const StagePlacement &l = p.layout;
    n_ = p.numOps();
    merged_ = !p.split;
    rank_.resize(n_);
    dur_.resize(n_);
    dep_.resize(n_);
    channel_.assign(n_, -1);
    transfer_.assign(n_, 0);
    double total = 0;
    for (int id = 0; id < n_; ++id) {
      int kind = p.kindOf(id), s = p.stageOf(id), m = p.mbOf(id);
      rank_[id] = p.rankOf(id);
      dur_[id] = p.duration(id) + (merged_ && kind == kI ? p.duration(p.weightOf(id)) : 0);
      total += dur_[id];
      dep_[id] = {-1, -1};
      int to = -1;
      if (kind == kF) {
        if (s > 0) dep_[id][0] = p.opId(kF, s - 1, m);
        if (s + 1 < l.stages) to = l.stageRank[s + 1];
      } else if (kind == kI) {
        dep_[id][0] = p.opId(kF, s, m);
        if (s + 1 < l.stages) dep_[id][1] = p.opId(kI, s + 1, m);
        if (s > 0) to = l.stageRank[s - 1];
      } else {
        dep_[id][0] = p.opId(kI, s, m);
      }
      if (to >= 0 && to != rank_[id]) {
        channel_[id] = (rank_[id] * l.ranks + to) * 2 + (kind == kI);
        transfer_[id] = p.costs.transfer[s];
      }
    }
    eps_ = 1e-9 * std::max(1.0, total);
    // Dependency order: forwards down the stages, I back up, then the W.
    for (int s = 0; s < l.stages; ++s)
      for (int m = 0; m < p.microbatches; ++m)
        order_.push_back(p.opId(kF, s, m));
    for (int s = l.stages - 1; s >= 0; --s)
      for (int m = 0; m < p.microbatches; ++m)
        order_.push_back(p.opId(kI, s, m));
    if (!merged_)
      for (int s = 0; s < l.stages; ++s)
        for (int m = 0; m < p.microbatches; ++m)
          order_.push_back(p.opId(kW, s, m));
    // Tails: what must still run after an op ends (one micro-batch alone).
    tail_.assign(n_, 0);
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      int id = *it, kind = p.kindOf(id), s = p.stageOf(id), m = p.mbOf(id);
      double after = 0;
      auto follow = [&](int next) {
        double gap = rank_[next] == rank_[id] ? 0 : transfer_[id];
        after = std::max(after, gap + dur_[next] + tail_[next]);
      };
      if (kind == kF) {
        if (s + 1 < l.stages) follow(p.opId(kF, s + 1, m));
        follow(p.opId(kI, s, m));
      } else if (kind == kI) {
        if (s > 0) follow(p.opId(kI, s - 1, m));
        if (!merged_) follow(p.weightOf(id));
      }
      tail_[id] = after;
    }
    // Equal starts need no rank order when no op depends on one that starts
    // with it: every message's op and transfer take time.
    tieBreak_ = true;
    for (int id = 0; id < n_; ++id)
      if (channel_[id] >= 0 && dur_[id] + transfer_[id] <= eps_)
        tieBreak_ = false;
    // Ops that may fill an idle gap: send nothing, hold no new activation.
    gapFillers_.resize(l.ranks);
    for (int id : order_)
      if (p.kindOf(id) != kF && channel_[id] < 0)
        gapFillers_[rank_[id]].push_back(id);
    placed_.assign(n_, 0);
    end_.assign(n_, 0);
    arrival_.assign(n_, 0);
    head_.assign(n_, 0);
    free_.assign(l.ranks, 0);
    live_.assign(l.ranks, 0);
    channelFree_.assign(size_t(l.ranks) * l.ranks * 2, 0);
    orders_.assign(l.ranks, {});
    nextF_.assign(l.stages, 0);
    toPlace_ = int(order_.size());
    // held: the least time one micro-batch's activations of a stage stay on
    // its rank, from the start of its F to the end of its W (or B).
    std::vector<double> headF(l.stages), headI(l.stages);
    for (int s = 0; s < l.stages; ++s)
      headF[s] = s == 0 ? 0 : headF[s - 1] + dur_[p.opId(kF, s - 1, 0)] + transfer_[p.opId(kF, s - 1, 0)];
    for (int s = l.stages - 1; s >= 0; --s)
      headI[s] = s + 1 == l.stages ? headF[s] + dur_[p.opId(kF, s, 0)]
                                   : headI[s + 1] + dur_[p.opId(kI, s + 1, 0)] + transfer_[p.opId(kI, s + 1, 0)];
    shortestHeld_.assign(l.ranks, kNone);
    for (int s = 0; s < l.stages; ++s) {
      int id = p.opId(kI, s, 0);
      double held = headI[s] - headF[s] + dur_[id] + (merged_ ? 0 : dur_[p.weightOf(id)]);
      shortestHeld_[l.stageRank[s]] = std::min(shortestHeld_[l.stageRank[s]], held);
    }
  }

  ExactResult run(const RankOrders *start, double startSpan, double knownBound) {
    ExactResult result;
    if (start && startSpan < kNone) {
      ub_ = startSpan;
      best_ = *start;
    }
    double rootBound = std::max(knownBound, nodeBound());
    double open = kNone;
    if (ub_ > rootBound + eps_)
      open = search();
    result.orders = best_;
    result.makespan = ub_;
    result.nodes = nodes_;
    result.optimal = !stopped_ && ub_ < kNone;
    result.bound = result.optimal ? ub_ : std::max(rootBound, std::min(ub_, open));
    if (!stopped_ && ub_ == kNone)
      result.bound = kNone; // nothing fits: proven
    return result;
  }

private:
  struct Candidate {
    int op;
    double start, bound;
  };
  struct Saved {
    double free, channelFree, lastStart;
    int64_t live;
    int lastRank;
  };

  double ready(int dep, int rank) const {
    return rank_[dep] == rank ? end_[dep] : arrival_[dep];
  }
  bool inputsPlaced(int id) const {
    for (int dep : dep_[id])
      if (dep >= 0 && !placed_[dep])
        return false;
    return true;
  }
  double startOf(int id) const {
    int r = rank_[id];
    double start = free_[r];
    for (int dep : dep_[id])
      if (dep >= 0)
        start = std::max(start, ready(dep, r));
    return start;
  }

  // A gap filler that could run entirely in rank r's idle time before `start`.
  bool gapFillable(int id, int r, double start) const {
    for (int g : gapFillers_[r]) {
      if (g == id || placed_[g] || !inputsPlaced(g))
        continue;
      double at = startOf(g);
      if (at < start && at + dur_[g] <= start)
        return true;
    }
    return false;
  }

  bool admissible(int id, double start) const {
    int r = rank_[id], kind = p_.kindOf(id), s = p_.stageOf(id), m = p_.mbOf(id);
    if (kind == kF && m != nextF_[s])
      return false;
    if (kind == kF && live_[r] + 1 > p_.budget)
      return false;
    if (start < lastStart_ - eps_)
      return false;
    if (tieBreak_ && r < lastRank_ && start <= lastStart_ + eps_)
      return false;
    if (kind == kW)
      for (int earlier = 0; earlier < m; ++earlier) {
        int w = p_.opId(kW, s, earlier);
        if (!placed_[w] && placed_[p_.opId(kI, s, earlier)])
          return false;
      }
    if (start > free_[r] && gapFillable(id, r, start))
      return false;
    return true;
  }

  Saved place(int id, double start) {
    int r = rank_[id], kind = p_.kindOf(id), c = channel_[id];
    Saved saved{free_[r], c >= 0 ? channelFree_[c] : 0, lastStart_, live_[r], lastRank_};
    end_[id] = start + dur_[id];
    arrival_[id] = end_[id];
    if (c >= 0) {
      arrival_[id] = std::max(end_[id], channelFree_[c]) + transfer_[id];
      channelFree_[c] = arrival_[id];
    }
    free_[r] = end_[id];
    placed_[id] = 1;
    orders_[r].push_back(id);
    if (kind == kF) {
      ++live_[r];
      ++nextF_[p_.stageOf(id)];
    } else if (kind == kW) {
      --live_[r];
    } else if (merged_) {
      int w = p_.weightOf(id);
      end_[w] = arrival_[w] = end_[id];
      placed_[w] = 1;
      orders_[r].push_back(w);
      --live_[r];
    }
    lastStart_ = start;
    lastRank_ = r;
    return saved;
  }

  void unplace(int id, const Saved &saved) {
    int r = rank_[id], c = channel_[id];
    free_[r] = saved.free;
    if (c >= 0)
      channelFree_[c] = saved.channelFree;
    lastStart_ = saved.lastStart;
    live_[r] = saved.live;
    lastRank_ = saved.lastRank;
    if (p_.kindOf(id) == kF)
      --nextF_[p_.stageOf(id)];
    placed_[id] = 0;
    orders_[r].pop_back();
    if (merged_ && p_.kindOf(id) == kI) {
      placed_[p_.weightOf(id)] = 0;
      orders_[r].pop_back();
    }
  }

  // A lower bound on every completion of the current prefix: each unplaced op
  // starts no earlier than the last one placed, its rank's free time and its
  // inputs' earliest arrival (a message also queues behind its channel's last)
  // and, for a forward, the end of the stage's forward before it;
  // then it and its tail must run (the critical path); and each rank must run
  // its unplaced ops one at a time between those earliest starts and tails,
  // which takes at least the best schedule that may interrupt ops (Jackson's
  // rule: always run the available op with the longest tail).
  double nodeBound() {
    double bound = 0;
    for (double f : free_)
      bound = std::max(bound, f);
    rankOps_.clear();
    for (int id : order_) {
      if (placed_[id])
        continue;
      int r = rank_[id];
      double h = std::max(lastStart_, free_[r]);
      for (int dep : dep_[id]) {
        if (dep < 0)
          continue;
        if (placed_[dep]) {
          h = std::max(h, ready(dep, r));
        } else {
          double at = head_[dep] + dur_[dep];
          if (rank_[dep] != r)
            at = std::max(at, channelFree_[channel_[dep]]) + transfer_[dep];
          h = std::max(h, at);
        }
      }
      // A stage's forwards run in micro-batch order (the symmetry cut).
      if (p_.kindOf(id) == kF && p_.mbOf(id) > 0 && !placed_[id - 1])
        h = std::max(h, head_[id - 1] + dur_[id - 1]);
      head_[id] = h;
      bound = std::max(bound, h + dur_[id] + tail_[id]);
      rankOps_.push_back({r, h, dur_[id], tail_[id], p_.kindOf(id) == kF});
    }
    std::sort(rankOps_.begin(), rankOps_.end(), [](const RankOp &a, const RankOp &b) {
      return a.rank != b.rank ? a.rank < b.rank : a.head < b.head;
    });
    for (size_t first = 0, last; first < rankOps_.size(); first = last) {
      for (last = first; last < rankOps_.size() && rankOps_[last].rank == rankOps_[first].rank;)
        ++last;
      bound = std::max(bound, forwardWindowBound(first, last));
      bound = std::max(bound, preemptiveBound(first, last));
    }
    for (int r = 0; r < p_.layout.ranks; ++r)
      bound = std::max(bound, budgetBound(r));
    return bound;
  }

  // The budget as B slots on rank r: an activation held now frees its slot no
  // earlier than its W can end; each forward still to come takes a slot from
  // its earliest start for at least the shortest held time. With equal
  // lengths, giving each (by earliest start) the slot that frees first is
  // optimal, so the last slot it frees bounds the makespan.
  double budgetBound(int r) {
    slots_.clear();
    starts_.clear();
    for (int s : p_.layout.rankStages[r])
      for (int m = nextF_[s]; m < p_.microbatches; ++m)
        starts_.push_back(head_[p_.opId(kF, s, m)]);
    if (starts_.empty() || int64_t(starts_.size()) <= p_.budget - live_[r])
      return 0; // every one gets a slot of its own: the path bound covers it
    for (int s : p_.layout.rankStages[r])
      for (int m = 0; m < nextF_[s]; ++m) {
        int w = merged_ ? p_.opId(kI, s, m) : p_.opId(kW, s, m);
        if (!placed_[w])
          slots_.push_back(head_[w] + dur_[w]);
      }
    for (int64_t k = live_[r]; k < p_.budget && slots_.size() < starts_.size() + live_[r]; ++k)
      slots_.push_back(0);
    std::sort(starts_.begin(), starts_.end());
    auto later = std::greater<double>();
    std::make_heap(slots_.begin(), slots_.end(), later);
    double end = 0;
    for (double start : starts_) {
      std::pop_heap(slots_.begin(), slots_.end(), later);
      slots_.back() = std::max(slots_.back(), start) + shortestHeld_[r];
      end = std::max(end, slots_.back());
      std::push_heap(slots_.begin(), slots_.end(), later);
    }
    return end;
  }

  // Before the earliest I or W of a rank can start, it runs only forwards, and
  // at most as many as its budget has room for (each stays until its W, after
  // that moment); whatever else it has to do runs after that moment.
  double forwardWindowBound(size_t first, size_t last) const {
    int r = rankOps_[first].rank;
    double firstBackward = kNone, work = 0, longestForward = 0;
    for (size_t i = first; i < last; ++i) {
      const RankOp &op = rankOps_[i];
      work += op.dur;
      if (op.forward)
        longestForward = std::max(longestForward, op.dur);
      else
        firstBackward = std::min(firstBackward, op.head);
    }
    double from = std::max(lastStart_, free_[r]);
    if (firstBackward == kNone || firstBackward <= from)
      return 0;
    double room = double(p_.budget - live_[r]) * longestForward;
    return firstBackward + work - std::min(firstBackward - from, room);
  }

  // Jackson's preemptive schedule of rankOps_[first, last) (sorted by head):
  // the least max(end + tail) when ops may be interrupted, so a lower bound.
  double preemptiveBound(size_t first, size_t last) {
    auto longerTail = [&](size_t a, size_t b) { return rankOps_[a].tail < rankOps_[b].tail; };
    ready_.clear();
    double t = rankOps_[first].head, bound = 0;
    size_t next = first;
    while (next < last || !ready_.empty()) {
      if (ready_.empty())
        t = std::max(t, rankOps_[next].head);
      while (next < last && rankOps_[next].head <= t) {
        ready_.push_back(next++);
        std::push_heap(ready_.begin(), ready_.end(), longerTail);
      }
      RankOp &op = rankOps_[ready_.front()];
      double until = next < last ? rankOps_[next].head : kNone;
      if (t + op.dur <= until) {
        t += op.dur;
        bound = std::max(bound, t + op.tail);
        std::pop_heap(ready_.begin(), ready_.end(), longerTail);
        ready_.pop_back();
      } else {
        op.dur -= until - t;
        t = until;
      }
    }
    return bound;
  }

  // Explores the children of the current node; returns a lower bound on what
  // was left unexplored (infinity when the subtree was finished).
  double search() {
    if (++nodes_ % 256 == 1 && std::chrono::steady_clock::now() > deadline_)
      stopped_ = true;
    if (placedCount_ == toPlace_) {
      double span = 0;
      for (double f : free_)
        span = std::max(span, f);
      if (span < ub_ - eps_) {
        ub_ = span;
        best_ = orders_;
      }
      return kNone;
    }
    std::vector<Candidate> children;
    for (int id : order_) {
      if (placed_[id] || !inputsPlaced(id))
        continue;
      double start = startOf(id);
      if (!admissible(id, start))
        continue;
      Saved saved = place(id, start);
      double bound = nodeBound();
      unplace(id, saved);
      if (bound < ub_ - eps_)
        children.push_back({id, start, bound});
    }
    std::sort(children.begin(), children.end(), [](const Candidate &a, const Candidate &b) {
      return a.bound != b.bound ? a.bound < b.bound : a.start < b.start;
    });
    double open = kNone;
    for (const Candidate &child : children) {
      if (child.bound >= ub_ - eps_)
        break;
      if (stopped_) {
        open = std::min(open, child.bound);
        continue;
      }
      Saved saved = place(child.op, child.start);
      ++placedCount_;
      open = std::min(open, search());
      --placedCount_;
      unplace(child.op, saved);
    }
    return open;
  }

  struct RankOp {
    int rank;
    double head, dur, tail;
    bool forward;
  };

  const SynthProblem &p_;
  std::chrono::steady_clock::time_point deadline_;
  int n_ = 0, toPlace_ = 0;
  bool merged_ = false, tieBreak_ = true;
  double eps_ = 1e-9;
  std::vector<int> rank_, channel_, order_;
  std::vector<std::array<int, 2>> dep_;
  std::vector<double> dur_, tail_, transfer_;
  std::vector<std::vector<int>> gapFillers_;
  // The node.
  std::vector<char> placed_;
  std::vector<double> end_, arrival_, head_, free_, channelFree_;
  std::vector<int64_t> live_;
  RankOrders orders_;
  double lastStart_ = 0;
  int lastRank_ = 0, placedCount_ = 0;
  std::vector<int> nextF_; // per stage: the micro-batch whose F comes next
  std::vector<RankOp> rankOps_;
  std::vector<size_t> ready_; // a heap of rankOps_ indices, longest tail first
  std::vector<double> shortestHeld_, slots_, starts_;
  // The result so far.
  double ub_ = kNone;
  RankOrders best_;
  uint64_t nodes_ = 0;
  bool stopped_ = false;
};

} // namespace

ExactResult solveExact(const SynthProblem &problem, const RankOrders *start, double startSpan,
                       double knownBound, std::chrono::steady_clock::time_point deadline) {
  return BranchAndBound(problem, deadline).run(start, startSpan, knownBound);
}

} // namespace pipec::synth
