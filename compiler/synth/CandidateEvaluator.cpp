#include "synth/CandidateEvaluator.h"

#include <algorithm>

namespace pipec::synth {

// The budget, whole backwards without split, and well-formed pairs (a paired
// F is followed by an I of another micro-batch; only with --overlap). A pair's
// forward allocates before its backward frees, as `pipec check` counts it.
bool CandidateEvaluator::memoryFits(const RankOrders &orders) {
  for (const std::vector<int> &order : orders) {
    int64_t live = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      int id = SynthProblem::idOf(order[i]), kind = p_.kindOf(id);
      live += kind == kF ? 1 : kind == kW ? -1 : 0;
      if (live > p_.budget) {
        why_ = "over the activation budget";
        return false;
      }
      if (!p_.split && kind == kI &&
          (i + 1 == order.size() || order[i + 1] != p_.weightOf(id))) {
        why_ = "a backward is split without --split";
        return false;
      }
      if (SynthProblem::paired(order[i]) &&
          (!p_.overlap || kind != kF || i + 1 == order.size() ||
           SynthProblem::paired(order[i + 1]) || p_.kindOf(order[i + 1]) != kI ||
           p_.mbOf(order[i + 1]) == p_.mbOf(id))) {
        why_ = "a pair is not a forward with a backward of another micro-batch";
        return false;
      }
    }
  }
  return true;
}

// Messages are matched in posting order on each (sender, receiver, kind)
// channel, so both ends must list a channel's messages in the same order.
bool CandidateEvaluator::channelsInOrder(const RankOrders &orders) {
  const StagePlacement &l = p_.layout;
  size_t channels = size_t(l.ranks) * l.ranks * 2;
  sent_.resize(channels);
  received_.resize(channels);
  for (size_t c = 0; c < channels; ++c) {
    sent_[c].clear();
    received_[c].clear();
  }
  for (int r = 0; r < l.ranks; ++r)
    for (int entry : orders[r]) {
      int id = SynthProblem::idOf(entry);
      int kind = p_.kindOf(id), s = p_.stageOf(id), m = p_.mbOf(id);
      int up = s > 0 ? l.rankOf(s - 1, m) : r, down = s + 1 < l.stages ? l.rankOf(s + 1, m) : r;
      if (kind == kF) {
        if (down != r)
          sent_[channel(r, down, 0)].push_back(id);
        if (up != r)
          received_[channel(up, r, 0)].push_back(p_.opId(kF, s - 1, m));
      } else if (kind == kI) {
        if (up != r)
          sent_[channel(r, up, 1)].push_back(id);
        if (down != r)
          received_[channel(down, r, 1)].push_back(p_.opId(kI, s + 1, m));
      }
    }
  for (size_t c = 0; c < channels; ++c)
    if (sent_[c] != received_[c]) {
      why_ = kChannelOrder;
      return false;
    }
  return true;
}

double CandidateEvaluator::makespan(const RankOrders &orders) {
  why_ = "";
  if (!memoryFits(orders) || !channelsInOrder(orders))
    return kInfeasible;
  const StagePlacement &l = p_.layout;
  end_.assign(p_.numOps(), -1);
  cursor_.assign(l.ranks, 0);
  std::vector<double> free(l.ranks, 0);
  size_t done = 0, total = 0;
  for (const auto &order : orders)
    total += order.size();
  // The time input `dep` of an op on rank r is available, or -1 if not yet.
  auto ready = [&](int dep, int r) -> double {
    double at = end_[dep];
    if (at < 0)
      return -1;
    int s = p_.stageOf(dep);
    return p_.rankOf(dep) == r ? at : at + p_.costs.transfer[s];
  };
  // The latest input of `id` on rank r, or -1 while one is missing.
  auto inputsAt = [&](int id, int r) -> double {
    int kind = p_.kindOf(id), s = p_.stageOf(id), m = p_.mbOf(id);
    int deps[2] = {-1, -1};
    if (kind == kF) {
      if (s > 0) deps[0] = p_.opId(kF, s - 1, m);
    } else if (kind == kI) {
      deps[0] = p_.opId(kF, s, m);
      if (s + 1 < l.stages) deps[1] = p_.opId(kI, s + 1, m);
    } else {
      deps[0] = p_.opId(kI, s, m);
    }
    double start = 0;
    for (int dep : deps)
      if (dep >= 0) {
        double at = ready(dep, r);
        if (at < 0)
          return -1;
        start = std::max(start, at);
      }
    return start;
  };
  bool progress = true;
  while (progress && done < total) {
    progress = false;
    for (int r = 0; r < l.ranks; ++r)
      while (cursor_[r] < orders[r].size()) {
        const std::vector<int> &order = orders[r];
        int entry = order[cursor_[r]], id = SynthProblem::idOf(entry);
        double start = inputsAt(id, r);
        if (start < 0)
          break;
        start = std::max(start, free[r]);
        if (!SynthProblem::paired(entry)) {
          end_[id] = free[r] = start + p_.duration(id);
          ++cursor_[r];
          ++done;
          progress = true;
          continue;
        }
        // A pair: one step, both halves end together.
        int backward = order[cursor_[r] + 1];
        double other = inputsAt(backward, r);
        if (other < 0)
          break;
        size_t i = cursor_[r] + 2;
        bool whole = i < order.size() && order[i] == p_.weightOf(backward) &&
                     p_.pairTakesW(id, backward);
        double finish = std::max(start, other) + p_.pairDuration(id, backward, whole);
        end_[id] = end_[backward] = free[r] = finish;
        if (whole)
          end_[order[i]] = finish;
        cursor_[r] += whole ? 3 : 2;
        done += whole ? 3 : 2;
        progress = true;
      }
  }
  if (done < total) {
    why_ = "the orders deadlock";
    return kInfeasible;
  }
  double span = 0;
  rankEndSum_ = 0;
  for (double f : free) {
    span = std::max(span, f);
    rankEndSum_ += f;
  }
  return span;
}

} // namespace pipec::synth
