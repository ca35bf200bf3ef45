// Scores a candidate (per-rank op orders) the way `pipec sim` times it and
// `pipec check` judges it: a step starts when its rank is free and its inputs
// have arrived (transfer time when they cross ranks); the candidate is
// rejected when a rank exceeds the budget, a channel would receive messages
// in another order than they were sent, a W does not directly follow its I
// without split, or the orders deadlock. Reusable scratch: the local search
// calls this thousands of times.
#pragma once

#include "synth/SynthProblem.h"

#include <limits>
#include <vector>

namespace pipec::synth {

constexpr double kInfeasible = std::numeric_limits<double>::infinity();
// why() when only a channel's message order fails (a repair may fix it).
inline constexpr char kChannelOrder[] = "messages received out of their channel's order";

class CandidateEvaluator {
public:
  explicit CandidateEvaluator(const SynthProblem &problem) : p_(problem) {}
  // The makespan, or kInfeasible (why() says which rule failed).
  double makespan(const RankOrders &orders);
  const char *why() const { return why_; }
  const std::vector<double> &ends() const { return end_; }
  // Of the last feasible candidate: the sum of the ranks' finishing times, a
  // tie-breaker that rewards moves shortening a rank that is not the last.
  double rankEndSum() const { return rankEndSum_; }

private:
  bool memoryFits(const RankOrders &orders);
  bool channelsInOrder(const RankOrders &orders);
  int channel(int from, int to, int gradient) const {
    return (from * p_.layout.ranks + to) * 2 + gradient;
  }

  const SynthProblem &p_;
  const char *why_ = "";
  double rankEndSum_ = 0;
  std::vector<double> end_;
  std::vector<size_t> cursor_;
  std::vector<std::vector<int>> sent_, received_;
};

} // namespace pipec::synth
