#include "sim/Simulator.h"

#include "sim/LinkModel.h"
#include "sim/SimulationFinish.h"

#include <algorithm>
#include <cassert>
#include <unordered_map>

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

double SimResult::stepStart(uint32_t k) const {
  double start = k > plan->rankStep[plan->rankOfStep(k)] ? stepEnd[k - 1] : 0.0;
  uint32_t input = scratch.latestInput[k];
  return input != ~0u ? std::max(start, messageArrived[input]) : start;
}

void SimulationPlan::appendStepClass(uint32_t c) {
  if (stepClassWide.empty() && c <= UINT16_MAX) {
    stepClassNarrow.push_back(static_cast<uint16_t>(c));
    return;
  }
  if (stepClassWide.empty()) { // first class past 16 bits: widen what is there
    stepClassWide.reserve(stepClassNarrow.capacity());
    stepClassWide.assign(stepClassNarrow.begin(), stepClassNarrow.end());
    std::vector<uint16_t>().swap(stepClassNarrow);
  }
  stepClassWide.push_back(c);
}

SimulationPlan buildSimulationPlan(const ScheduleIR &ir, const CommPlan &comm) {
  SimulationPlan plan;
  plan.comm = &comm;
  size_t ranks = comm.ranks.size();
  plan.numStages = ir.numStages;
  plan.numChannels = comm.numChannels;

  plan.rankStep.reserve(ranks + 1);
  size_t steps = 0;
  for (const RankComm &rank : comm.ranks) {
    plan.rankStep.push_back(static_cast<uint32_t>(steps));
    steps += rank.stepOp.size();
  }
  plan.rankStep.push_back(static_cast<uint32_t>(steps));

  // Step classes: single ops are kind * stages + stage; pairs are numbered after.
  for (OpKind kind : {OpKind::F, OpKind::B, OpKind::I, OpKind::W, OpKind::R})
    for (int64_t s = 0; s < ir.numStages; ++s)
      plan.classes.push_back({kind, false, static_cast<int32_t>(s), 0});
  std::unordered_map<uint64_t, uint32_t> pairClass; // (forward, backward kind, stage) -> class
  plan.stepClassNarrow.reserve(steps);
  for (size_t r = 0; r < ranks; ++r) {
    const std::vector<Op> &ops = ir.ranks[r].ops;
    for (uint32_t first : comm.ranks[r].stepOp) {
      const Op &op = ops[first];
      if (op.pair != PairRole::First) {
        plan.appendStepClass(static_cast<uint32_t>(static_cast<int>(op.kind) * ir.numStages +
                                                   op.stage));
        continue;
      }
      const Op &backward = ops[first + 1];
      uint64_t key = (uint64_t(uint32_t(op.stage)) << 34) |
                     (uint64_t(uint32_t(backward.stage)) << 2) | uint64_t(backward.kind);
      auto [it, inserted] = pairClass.try_emplace(key, static_cast<uint32_t>(plan.classes.size()));
      if (inserted)
        plan.classes.push_back({backward.kind, true, backward.stage, op.stage});
      plan.appendStepClass(it->second);
    }
  }

  size_t messages = comm.messages.size();
  // Message ids are in posting order, sender after sender (CommPlan): rank r's
  // sends are the ids from rankMessage[r], in the order of their steps.
  plan.rankMessage.assign(ranks + 1, 0);
  for (size_t id = 0; id < messages; ++id) {
    assert((id == 0 || plan.producerStep(comm.messages[id - 1]) <=
                           plan.producerStep(comm.messages[id])) &&
           "CommPlan numbers messages in posting order");
    ++plan.rankMessage[comm.from(comm.messages[id]) + 1];
  }
  for (size_t r = 0; r < ranks; ++r)
    plan.rankMessage[r + 1] += plan.rankMessage[r];

  if (!ir.microbatchSizes.empty()) {
    plan.stepScale.reserve(steps);
    for (size_t r = 0; r < ranks; ++r) {
      const std::vector<Op> &ops = ir.ranks[r].ops;
      for (uint32_t first : comm.ranks[r].stepOp) {
        double size = double(ir.sizeOf(ops[first].microbatch));
        if (ops[first].pair == PairRole::First)
          size = (size + double(ir.sizeOf(ops[first + 1].microbatch))) / 2;
        plan.stepScale.push_back(size);
      }
    }
    plan.messageScale.reserve(messages);
    for (const Message &m : comm.messages)
      plan.messageScale.push_back(
          double(ir.sizeOf(ir.ranks[comm.from(m)].ops[m.producer].microbatch)));
  }
  return plan;
}

namespace {

// The event loop over one plan; every array it touches is in `result`.
class EventLoop {
public:
  EventLoop(const SimulationPlan &plan, SimResult &result, const double *stepDuration)
      : plan_(plan), result_(result), s_(result.scratch), stepDuration_(stepDuration) {}

  void run(const CostModel &costs) {
    prepare(costs);
    size_t ranks = plan_.numRanks();
    for (size_t r = 0; r < ranks; ++r)
      s_.ready.push_back(static_cast<uint32_t>(r));
    while (!s_.ready.empty()) {
      uint32_t r = s_.ready.back();
      s_.ready.pop_back();
      advance(r);
    }
    finishSimulation(plan_, result_);
  }

private:
  void prepare(const CostModel &costs) {
    classDurations(plan_, costs, s_.classDuration);
    s_.stageTransfer.resize(plan_.numStages);
    for (int64_t s = 0; s < plan_.numStages; ++s)
      s_.stageTransfer[s] = costs.transfer(s);
    s_.channelFree.assign(plan_.numChannels, 0.0);
    s_.latestInput.assign(plan_.numSteps(), kNoMessage);
    s_.next.assign(plan_.rankStep.begin(), plan_.rankStep.end() - 1);
    s_.sendCursor.assign(plan_.rankMessage.begin(), plan_.rankMessage.end() - 1);
    s_.ready.clear();
    result_.ranks.assign(plan_.numRanks(), RankTiming{});
    // Until a step runs, its end holds how many of its inputs are still missing
    // (small counts, exact in a double): no separate byte a step.
    // Counted from the messages on each run rather than kept in the plan.
    result_.stepEnd.assign(plan_.numSteps(), 0.0);
    for (const Message &m : plan_.comm->messages)
      ++result_.stepEnd[plan_.consumerStep(m)];
    result_.messageArrived.resize(plan_.numMessages());
    result_.criticalPath.clear();
  }

  // When step k's rank is free to start it.
  double rankFree(size_t rank, uint32_t k) const {
    return k > plan_.rankStep[rank] ? result_.stepEnd[k - 1] : 0.0;
  }

  // Runs rank r's steps whose inputs have all arrived, in order; sends what they produce.
  void advance(uint32_t r) {
    uint32_t &k = s_.next[r];
    uint32_t end = plan_.rankStep[r + 1];
    double busy = result_.ranks[r].busy;
    for (; k < end && result_.stepEnd[k] == 0; ++k) {
      double start = rankFree(r, k);
      uint32_t input = s_.latestInput[k];
      if (input != kNoMessage)
        start = std::max(start, result_.messageArrived[input]);
      double duration = stepDuration_ ? stepDuration_[k] : s_.classDuration[plan_.stepClass(k)];
      if (!plan_.stepScale.empty()) // per-micro-batch sizes (`sizes`)
        duration *= plan_.stepScale[k];
      double finish = start + duration;
      result_.stepEnd[k] = finish;
      busy += finish - start;
      sendOutputs(r, k, finish);
    }
    result_.ranks[r].busy = busy;
  }

  void sendOutputs(uint32_t r, uint32_t step, double end) {
    const std::vector<Message> &messages = plan_.comm->messages;
    uint32_t &id = s_.sendCursor[r];
    for (; id < plan_.rankMessage[r + 1] && plan_.producerStep(messages[id]) == step; ++id) {
      const Message &m = messages[id];
      double &channelFree = s_.channelFree[m.channel];
      double sent = std::max(end, channelFree);
      double transfer = s_.stageTransfer[plan_.messageStage(m)];
      if (!plan_.messageScale.empty())
        transfer *= plan_.messageScale[id];
      double arrived = sent + transfer;
      channelFree = arrived;
      result_.messageArrived[id] = arrived;
      uint32_t consumer = plan_.consumerStep(m);
      uint32_t &latest = s_.latestInput[consumer];
      if (latest == kNoMessage || arrived > result_.messageArrived[latest])
        latest = id;
      if (--result_.stepEnd[consumer] == 0)
        s_.ready.push_back(static_cast<uint32_t>(plan_.comm->to(m)));
    }
  }

  const SimulationPlan &plan_;
  SimResult &result_;
  SimResult::Scratch &s_;
  const double *stepDuration_;
};

} // namespace

void classDurations(const SimulationPlan &plan, const CostModel &costs, std::vector<double> &out) {
  out.resize(plan.classes.size());
  for (size_t c = 0; c < plan.classes.size(); ++c) {
    const StepClass &k = plan.classes[c];
    out[c] = k.pair ? costs.pair(k.forwardStage, k.kind, k.stage) : costs.op(k.kind, k.stage);
  }
}

void stepDurations(const SimulationPlan &plan, const CostModel &costs, std::vector<double> &out) {
  std::vector<double> byClass;
  classDurations(plan, costs, byClass);
  out.resize(plan.numSteps());
  for (uint32_t k = 0; k < plan.numSteps(); ++k)
    out[k] = byClass[plan.stepClass(k)];
}

void finishSimulation(const SimulationPlan &plan, SimResult &result) {
  const SimResult::Scratch &s = result.scratch;
  auto rankFree = [&](size_t rank, uint32_t k) {
    return k > plan.rankStep[rank] ? result.stepEnd[k - 1] : 0.0;
  };
  // Steps that never ran end at 0, not at their count of missing inputs.
  for (size_t r = 0; r < plan.numRanks(); ++r)
    std::fill(result.stepEnd.begin() + s.next[r], result.stepEnd.begin() + plan.rankStep[r + 1],
              0.0);
  double makespan = 0;
  int32_t lastRank = -1;
  for (size_t r = 0; r < plan.numRanks(); ++r) {
    uint32_t first = plan.rankStep[r], end = plan.rankStep[r + 1];
    if (end > first && result.stepEnd[end - 1] >= makespan) {
      makespan = result.stepEnd[end - 1];
      lastRank = static_cast<int32_t>(r);
    }
  }
  result.makespan = makespan;
  result.trafficEnd = std::max(result.trafficEnd, makespan);
  for (RankTiming &r : result.ranks) {
    r.bubble = makespan - r.busy;
    r.utilization = makespan > 0 ? r.busy / makespan : 1.0;
  }
  // Critical path: from the last step back through whatever made each step wait
  // (an input that arrived after the rank was free).
  if (lastRank < 0)
    return;
  int32_t rank = lastRank;
  int64_t step = static_cast<int64_t>(plan.rankStep[rank + 1]) - 1;
  while (step >= static_cast<int64_t>(plan.rankStep[rank])) {
    uint32_t k = static_cast<uint32_t>(step);
    result.criticalPath.push_back({rank, k});
    uint32_t input = s.latestInput[k];
    if (input != kNoMessage && result.messageArrived[input] > rankFree(rank, k)) {
      const Message &m = plan.comm->messages[input];
      step = plan.producerStep(m);
      rank = plan.comm->from(m);
    } else {
      --step;
    }
  }
  std::reverse(result.criticalPath.begin(), result.criticalPath.end());
}

void simulate(std::shared_ptr<const SimulationPlan> plan, const CostModel &costs,
              SimResult &result, const SimPerturbation &perturbation) {
  result.plan = std::move(plan);
  result.trafficEnd = 0;
  if (perturbation.links)
    simulateContended(*result.plan, costs, perturbation, result);
  else
    EventLoop(*result.plan, result, perturbation.stepDuration).run(costs);
}

SimResult simulate(const ScheduleIR &ir, const CheckReport &report, const CostModel &costs) {
  SimResult result;
  simulate(std::make_shared<const SimulationPlan>(buildSimulationPlan(ir, *report.comm)), costs,
           result);
  return result;
}

} // namespace pipec
