#include "sim/Simulator.h"

#include "sim/LinkModel.h"
#include "sim/SimulationFinish.h"
#include "sim/TimedMemory.h"

#include <algorithm>
#include <cassert>
#include <unordered_map>

namespace pipec {

namespace {

// The copy-stream tables of SimulationPlan (see there), for a schedule with memory ops.
void planCopyStreams(const ScheduleIR &ir, const CommPlan &comm, SimulationPlan &plan) {
  size_t steps = plan.numSteps();
  constexpr uint32_t none = SimulationPlan::kNoStep;
  plan.prevCompute.assign(steps, none);
  plan.prevCopy.assign(steps, none);
  plan.waitsFor.assign(steps, none);
  plan.copyStep.assign(steps, 0);
  for (size_t r = 0; r < ir.ranks.size(); ++r) {
    const std::vector<Op> &ops = ir.ranks[r].ops;
    uint32_t lastCompute = none, lastCopy = none;
    // (stage, micro-batch) -> the Reload or Load step that brings it back here.
    std::unordered_map<uint64_t, uint32_t> returning;
    auto keyOf = [](const Op &op) {
      return uint64_t(uint32_t(op.stage)) << 32 | uint32_t(op.microbatch);
    };
    const std::vector<uint32_t> &stepOp = comm.ranks[r].stepOp;
    for (uint32_t s = 0; s < stepOp.size(); ++s) {
      uint32_t k = plan.rankStep[r] + s;
      const Op &op = ops[stepOp[s]];
      plan.prevCompute[k] = lastCompute;
      plan.prevCopy[k] = lastCopy;
      if (isMemoryOp(op.kind)) {
        plan.copyStep[k] = 1;
        lastCopy = k;
        if (op.kind == OpKind::Reload || op.kind == OpKind::Load)
          returning[keyOf(op)] = k;
        continue;
      }
      lastCompute = k;
      const Op &backward = op.pair == PairRole::First ? ops[stepOp[s] + 1] : op;
      if (!returning.empty() && (backward.kind == OpKind::B || backward.kind == OpKind::I)) {
        auto it = returning.find(keyOf(backward));
        if (it != returning.end())
          plan.waitsFor[k] = it->second;
      }
    }
  }
}

} // namespace

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
  double start = plan->hasCopyStreams()
                     ? plan->readyAt(k, plan->rankStep[plan->rankOfStep(k)], stepEnd)
                     : k > plan->rankStep[plan->rankOfStep(k)] ? stepEnd[k - 1] : 0.0;
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

  // Step classes: single ops are kind * stages + stage (F..R; the memory ops'
  // only when the schedule has any, so others keep their class count); pairs are
  // numbered after.
  bool memoryOps = hasMemoryOps(ir);
  for (OpKind kind : {OpKind::F, OpKind::B, OpKind::I, OpKind::W, OpKind::R})
    for (int64_t s = 0; s < ir.numStages; ++s)
      plan.classes.push_back({kind, false, static_cast<int32_t>(s), 0});
  plan.memoryClassBase = static_cast<uint32_t>(plan.classes.size());
  if (memoryOps)
    for (int kind = int(OpKind::Offload); kind < ast::kNumOpKinds; ++kind)
      for (int64_t s = 0; s < ir.numStages; ++s)
        plan.classes.push_back({OpKind(kind), false, static_cast<int32_t>(s), 0});
  std::unordered_map<uint64_t, uint32_t> pairClass; // (forward, backward kind, stage) -> class
  plan.stepClassNarrow.reserve(steps);
  for (size_t r = 0; r < ranks; ++r) {
    const std::vector<Op> &ops = ir.ranks[r].ops;
    for (uint32_t first : comm.ranks[r].stepOp) {
      const Op &op = ops[first];
      if (isMemoryOp(op.kind)) {
        plan.appendStepClass(plan.memoryClassBase +
                             static_cast<uint32_t>((int(op.kind) - int(OpKind::Offload)) *
                                                       ir.numStages +
                                                   op.stage));
        continue;
      }
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

  if (memoryOps)
    planCopyStreams(ir, comm, plan);

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
    s_.stageLatency.resize(plan_.numStages);
    for (int64_t s = 0; s < plan_.numStages; ++s) {
      s_.stageTransfer[s] = costs.transfer(s);
      s_.stageLatency[s] = costs.latency(s);
    }
    moveTransfers(plan_, costs, s_.moveTransfer);
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
    if (plan_.hasCopyStreams())
      advanceSteps<true>(r);
    else
      advanceSteps<false>(r); // the loop as it was before copy streams, to the instruction
  }

  template <bool CopyStreams> void advanceSteps(uint32_t r) {
    uint32_t &k = s_.next[r];
    uint32_t end = plan_.rankStep[r + 1];
    double busy = result_.ranks[r].busy;
    for (; k < end && result_.stepEnd[k] == 0; ++k) {
      double start = CopyStreams ? plan_.readyAt(k, plan_.rankStep[r], result_.stepEnd)
                                 : rankFree(r, k);
      uint32_t input = s_.latestInput[k];
      if (input != kNoMessage)
        start = std::max(start, result_.messageArrived[input]);
      double duration = stepDuration_ ? stepDuration_[k] : s_.classDuration[plan_.stepClass(k)];
      if (!plan_.stepScale.empty()) // per-micro-batch sizes (`sizes`)
        duration *= plan_.stepScale[k];
      double finish = start + duration;
      result_.stepEnd[k] = finish;
      if (!CopyStreams || !plan_.copyStep[k]) // copies overlap compute: not busy time
        busy += finish - start;
      sendOutputs<CopyStreams>(r, k, finish);
    }
    result_.ranks[r].busy = busy;
  }

  template <bool CopyStreams> void sendOutputs(uint32_t r, uint32_t step, double end) {
    const std::vector<Message> &messages = plan_.comm->messages;
    uint32_t &id = s_.sendCursor[r];
    for (; id < plan_.rankMessage[r + 1] && plan_.producerStep(messages[id]) == step; ++id) {
      const Message &m = messages[id];
      double &channelFree = s_.channelFree[m.channel];
      double sent = std::max(end, channelFree);
      double transfer = CopyStreams ? plan_.messageTransfer(m, s_.stageTransfer, s_.moveTransfer)
                                    : s_.stageTransfer[plan_.messageStage(m)];
      if (!plan_.messageScale.empty())
        transfer = SimulationPlan::scaledTransfer(
            transfer, s_.stageLatency[plan_.messageStage(m)], plan_.messageScale[id]);
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

void moveTransfers(const SimulationPlan &plan, const CostModel &costs, std::vector<double> &out) {
  if (!plan.hasCopyStreams()) {
    out.clear();
    return;
  }
  out.resize(2 * size_t(plan.numStages));
  for (int64_t s = 0; s < plan.numStages; ++s) {
    out[2 * size_t(s)] = costs.moveTransfer(s, true);
    out[2 * size_t(s) + 1] = costs.moveTransfer(s, false);
  }
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
  uint32_t lastStep = 0;
  for (size_t r = 0; r < plan.numRanks(); ++r) {
    uint32_t first = plan.rankStep[r], end = plan.rankStep[r + 1];
    if (end == first)
      continue;
    uint32_t last = end - 1;
    if (plan.hasCopyStreams()) // the last step to end may be on either stream
      for (uint32_t k = first; k < end; ++k)
        if (result.stepEnd[k] >= result.stepEnd[last])
          last = k;
    if (result.stepEnd[last] >= makespan) {
      makespan = result.stepEnd[last];
      lastRank = static_cast<int32_t>(r);
      lastStep = last;
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
  int64_t step = lastStep;
  while (step >= static_cast<int64_t>(plan.rankStep[rank])) {
    uint32_t k = static_cast<uint32_t>(step);
    result.criticalPath.push_back({rank, k});
    uint32_t input = s.latestInput[k];
    uint32_t before = SimulationPlan::kNoStep;
    double ready = plan.hasCopyStreams() ? plan.readyAt(k, plan.rankStep[rank], result.stepEnd, &before)
                                         : rankFree(rank, k);
    if (input != kNoMessage && result.messageArrived[input] > ready) {
      const Message &m = plan.comm->messages[input];
      step = plan.producerStep(m);
      rank = plan.comm->from(m);
    } else if (plan.hasCopyStreams()) {
      if (before == SimulationPlan::kNoStep)
        break;
      step = before;
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
