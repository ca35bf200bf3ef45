#include "sim/Simulator.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>

namespace pipec {

double SimResult::totalBusy() const {
  double sum = 0;
  for (const RankTiming &r : ranks)
    sum += r.busy;
  return sum;
}

double SimResult::totalBubble() const {
  double sum = 0;
  for (const RankTiming &r : ranks)
    sum += r.bubble;
  return sum;
}

namespace {

constexpr uint32_t kNoMessage = ~0u;

class Simulation {
public:
  Simulation(const ScheduleIR &ir, const CommPlan &plan, const CostModel &costs)
      : ir_(ir), plan_(plan), costs_(costs) {}

  SimResult run() {
    size_t ranks = plan_.ranks.size();
    result_.ranks.resize(ranks);
    result_.messages.assign(plan_.messages.size(), {0, 0});
    next_.assign(ranks, 0);
    sendCursor_.assign(ranks, 0);
    missing_.resize(ranks);
    latestInput_.resize(ranks);
    boundBy_.resize(ranks);
    for (size_t r = 0; r < ranks; ++r) {
      size_t steps = plan_.ranks[r].stepOp.size();
      missing_[r].assign(steps, 0);
      latestInput_[r].assign(steps, kNoMessage);
      result_.ranks[r].steps.resize(steps);
      boundBy_[r].assign(steps, kNoMessage);
    }
    for (const Message &m : plan_.messages)
      ++missing_[m.to][m.consumerStep];
    assignChannels();
    for (size_t r = 0; r < ranks; ++r)
      ready_.push_back(r);
    while (!ready_.empty()) {
      size_t r = ready_.back();
      ready_.pop_back();
      advance(r);
    }
    finish();
    return std::move(result_);
  }

private:
  void assignChannels() {
    llvm::DenseMap<uint64_t, uint32_t> ids;
    channelOf_.resize(plan_.messages.size());
    for (uint32_t id = 0; id < plan_.messages.size(); ++id) {
      channelOf_[id] = ids.try_emplace(channelKey(plan_.messages[id]), ids.size()).first->second;
    }
    channelFree_.assign(ids.size(), 0.0);
  }

  double stepDuration(size_t r, uint32_t firstOp) const {
    const std::vector<Op> &ops = ir_.ranks[r].ops;
    const Op &op = ops[firstOp];
    if (op.pair == PairRole::First) {
      const Op &backward = ops[firstOp + 1];
      return costs_.pair(op.stage, backward.kind, backward.stage);
    }
    return costs_.op(op.kind, op.stage);
  }

  // Runs rank r's steps whose inputs have all arrived, in order; sends what they produce.
  void advance(size_t r) {
    const RankComm &comm = plan_.ranks[r];
    RankTiming &timing = result_.ranks[r];
    while (next_[r] < comm.stepOp.size() && missing_[r][next_[r]] == 0) {
      uint32_t k = static_cast<uint32_t>(next_[r]++);
      double rankFree = k > 0 ? timing.steps[k - 1].end : 0.0;
      double start = rankFree;
      uint32_t input = latestInput_[r][k];
      if (input != kNoMessage && result_.messages[input].arrived > rankFree) {
        start = result_.messages[input].arrived;
        boundBy_[r][k] = input;
      }
      double end = start + stepDuration(r, comm.stepOp[k]);
      timing.steps[k] = {comm.stepOp[k], start, end};
      timing.busy += end - start;
      sendOutputs(r, k, end);
    }
  }

  void sendOutputs(size_t r, uint32_t step, double end) {
    const std::vector<uint32_t> &sends = plan_.ranks[r].sends;
    size_t &cursor = sendCursor_[r];
    for (; cursor < sends.size() && plan_.messages[sends[cursor]].producerStep == step; ++cursor) {
      uint32_t id = sends[cursor];
      const Message &m = plan_.messages[id];
      double &channelFree = channelFree_[channelOf_[id]];
      double sent = std::max(end, channelFree);
      double arrived = sent + costs_.transfer(m.stage);
      channelFree = arrived;
      result_.messages[id] = {sent, arrived};
      uint32_t &latest = latestInput_[m.to][m.consumerStep];
      if (latest == kNoMessage || arrived > result_.messages[latest].arrived)
        latest = id;
      if (--missing_[m.to][m.consumerStep] == 0)
        ready_.push_back(m.to);
    }
  }

  void finish() {
    double makespan = 0;
    int32_t lastRank = -1;
    for (size_t r = 0; r < result_.ranks.size(); ++r)
      if (!result_.ranks[r].steps.empty() && result_.ranks[r].steps.back().end >= makespan) {
        makespan = result_.ranks[r].steps.back().end;
        lastRank = static_cast<int32_t>(r);
      }
    result_.makespan = makespan;
    for (RankTiming &r : result_.ranks) {
      r.bubble = makespan - r.busy;
      r.utilization = makespan > 0 ? r.busy / makespan : 1.0;
    }
    // Critical path: from the last step back through whatever made each step wait.
    if (lastRank < 0)
      return;
    int32_t rank = lastRank;
    int64_t step = static_cast<int64_t>(result_.ranks[rank].steps.size()) - 1;
    while (step >= 0) {
      result_.criticalPath.push_back({rank, static_cast<uint32_t>(step)});
      uint32_t input = boundBy_[rank][step];
      if (input != kNoMessage) {
        rank = plan_.messages[input].from;
        step = plan_.messages[input].producerStep;
      } else {
        --step;
      }
    }
    std::reverse(result_.criticalPath.begin(), result_.criticalPath.end());
  }

  const ScheduleIR &ir_;
  const CommPlan &plan_;
  const CostModel &costs_;
  SimResult result_;
  std::vector<size_t> next_, sendCursor_, ready_;
  std::vector<std::vector<uint32_t>> missing_, latestInput_, boundBy_;
  std::vector<uint32_t> channelOf_;
  std::vector<double> channelFree_;
};

} // namespace

SimResult simulate(const ScheduleIR &ir, const CheckReport &report, const CostModel &costs) {
  return Simulation(ir, *report.comm, costs).run();
}

} // namespace pipec
