#include "synth/Evaluator.h"

#include <algorithm>

namespace pipec::synth {

bool Evaluator::memoryFits(const RankOrders &orders) {
  for (const std::vector<int> &order : orders) {
    int64_t live = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      int kind = p_.kindOf(order[i]);
      live += kind == kF ? 1 : kind == kW ? -1 : 0;
      if (live > p_.budget) {
        why_ = "over the activation budget";
        return false;
      }
      if (!p_.split && kind == kI &&
          (i + 1 == order.size() || order[i + 1] != p_.weightOf(order[i]))) {
        why_ = "a backward is split without --split";
        return false;
      }
    }
  }
  return true;
}

// Messages are matched in posting order on each (sender, receiver, kind)
// channel, so both ends must list a channel's messages in the same order.
bool Evaluator::channelsInOrder(const RankOrders &orders) {
  const Layout &l = p_.layout;
  size_t channels = size_t(l.ranks) * l.ranks * 2;
  sent_.resize(channels);
  received_.resize(channels);
  for (size_t c = 0; c < channels; ++c) {
    sent_[c].clear();
    received_[c].clear();
  }
  for (int r = 0; r < l.ranks; ++r)
    for (int id : orders[r]) {
      int kind = p_.kindOf(id), s = p_.stageOf(id), m = p_.mbOf(id);
      if (kind == kF) {
        if (s + 1 < l.stages && l.stageRank[s + 1] != r)
          sent_[channel(r, l.stageRank[s + 1], 0)].push_back(id);
        if (s > 0 && l.stageRank[s - 1] != r)
          received_[channel(l.stageRank[s - 1], r, 0)].push_back(p_.opId(kF, s - 1, m));
      } else if (kind == kI) {
        if (s > 0 && l.stageRank[s - 1] != r)
          sent_[channel(r, l.stageRank[s - 1], 1)].push_back(id);
        if (s + 1 < l.stages && l.stageRank[s + 1] != r)
          received_[channel(l.stageRank[s + 1], r, 1)].push_back(p_.opId(kI, s + 1, m));
      }
    }
  for (size_t c = 0; c < channels; ++c)
    if (sent_[c] != received_[c]) {
      why_ = "messages received out of their channel's order";
      return false;
    }
  return true;
}

double Evaluator::makespan(const RankOrders &orders) {
  why_ = "";
  if (!memoryFits(orders) || !channelsInOrder(orders))
    return kInfeasible;
  const Layout &l = p_.layout;
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
  bool progress = true;
  while (progress && done < total) {
    progress = false;
    for (int r = 0; r < l.ranks; ++r)
      while (cursor_[r] < orders[r].size()) {
        int id = orders[r][cursor_[r]];
        int kind = p_.kindOf(id), s = p_.stageOf(id), m = p_.mbOf(id);
        double start = free[r];
        int deps[2] = {-1, -1};
        if (kind == kF) {
          if (s > 0) deps[0] = p_.opId(kF, s - 1, m);
        } else if (kind == kI) {
          deps[0] = p_.opId(kF, s, m);
          if (s + 1 < l.stages) deps[1] = p_.opId(kI, s + 1, m);
        } else {
          deps[0] = p_.opId(kI, s, m);
        }
        bool blocked = false;
        for (int dep : deps)
          if (dep >= 0) {
            double at = ready(dep, r);
            if (at < 0) { blocked = true; break; }
            start = std::max(start, at);
          }
        if (blocked)
          break;
        end_[id] = free[r] = start + p_.duration(id);
        ++cursor_[r];
        ++done;
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
