// The simulator's loop when messages share network links (sim/LinkModel.h).
// The plain loop (Simulator.cpp) may run ranks in any order, because a message's
// arrival depends only on its own departure; under contention it depends on
// every message in flight at the same time, so this loop runs in time order:
// a queue of step ends and arrivals, and the set of messages on the wire, whose
// rates change whenever one joins or leaves a link.
//
// Everything else is the plain loop's model, step for step: a step starts when
// its rank is free and its inputs have arrived, a message leaves when its step
// ends and after the previous message of its channel arrived; per-micro-batch
// sizes scale both as they scale them there.
//
// Memory ops run on the rank's copy stream (Simulator.h): the two streams of a
// rank are issued each in its own program order, a compute step once the compute
// stream is free, its inputs arrived and the copy it waits for started, a copy
// step once the compute step before it and the copy before it started and its
// input arrived. Every time is still the plain loop's max of the same ends; only
// the order of discovery differs, so no step ever starts before the event that
// let it start. Steps of the two streams end out of program order, so a step's
// messages are found by its number, not by a cursor.
//
// A message that never shared a link arrives at departure + transfer, the plain
// loop's very expression, so a topology that no two messages share (or messages
// with no bytes, latency only) gives the plain results, bit for bit.
//
// Rank traffic (SimPerturbation::rankTraffic) is a flow without a message: it
// leaves on the rank's NIC when the rank's last step ends, shares links like any
// message, and ends the step when it is the last thing on the wire (trafficEnd).
#include "sim/LinkModel.h"
#include "sim/SimulationFinish.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <queue>

namespace pipec {

namespace {

struct Event {
  double time;
  uint64_t seq;  // ties: in order of scheduling, so every run takes the same order
  uint32_t id;   // a global step (a step end) or a message (an arrival)
  uint32_t rank; // step ends only
  bool arrival;
  bool operator>(const Event &o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

struct Flow {
  uint32_t message; // kNoMessage: rank traffic
  uint32_t rank;    // rank traffic: whose
  double start;     // when it left
  double remaining; // serialisation left, in seconds at the full rate
  double rate;      // share of the full rate, in (0, 1]
  double updated;   // when `remaining` was last brought up to date
  bool slowed;      // ever moved below the full rate
  LinkModel::Path path;
};

class ContendedLoop {
public:
  ContendedLoop(const SimulationPlan &plan, const CostModel &costs,
                const SimPerturbation &perturbation, SimResult &result)
      : plan_(plan), costs_(costs), stepDuration_(perturbation.stepDuration),
        rankTraffic_(perturbation.rankTraffic), links_(*perturbation.links), result_(result),
        s_(result.scratch) {}

  void run() {
    prepare();
    for (size_t r = 0; r < plan_.numRanks(); ++r)
      tryStart(uint32_t(r));
    while (true) {
      size_t which = flows_.size();
      double flowEnd = std::numeric_limits<double>::infinity();
      for (size_t f = 0; f < flows_.size(); ++f) {
        double end = flows_[f].updated + flows_[f].remaining / flows_[f].rate;
        if (end < flowEnd)
          flowEnd = end, which = f;
      }
      if (which == flows_.size() && events_.empty())
        break;
      if (which < flows_.size() && (events_.empty() || flowEnd <= events_.top().time)) {
        flowDone(which, flowEnd);
        continue;
      }
      Event e = events_.top();
      events_.pop();
      if (e.arrival)
        arrived(e.id, e.time);
      else
        stepEnded(e.rank, e.id, e.time);
    }
    if (plan_.hasCopyStreams()) // the first step of each rank that did not run
      for (size_t r = 0; r < plan_.numRanks(); ++r)
        s_.next[r] = std::min(nextCompute_[r], nextCopy_[r]);
    finishSimulation(plan_, result_);
  }

private:
  void prepare() {
    classDurations(plan_, costs_, s_.classDuration);
    s_.stageTransfer.resize(plan_.numStages);
    stageLatency_.resize(plan_.numStages);
    for (int64_t s = 0; s < plan_.numStages; ++s) {
      s_.stageTransfer[s] = costs_.transfer(s);
      stageLatency_[s] = costs_.latency(s);
    }
    moveTransfers(plan_, costs_, s_.moveTransfer);
    s_.latestInput.assign(plan_.numSteps(), kNoMessage);
    s_.next.assign(plan_.rankStep.begin(), plan_.rankStep.end() - 1);
    s_.sendCursor.assign(plan_.rankMessage.begin(), plan_.rankMessage.end() - 1);
    result_.ranks.assign(plan_.numRanks(), RankTiming{});
    // As in the plain loop: until a step runs, its end counts its missing inputs.
    result_.stepEnd.assign(plan_.numSteps(), 0.0);
    for (const Message &m : plan_.comm->messages)
      ++result_.stepEnd[plan_.consumerStep(m)];
    result_.messageArrived.assign(plan_.numMessages(), 0.0);
    result_.criticalPath.clear();
    busy_.assign(plan_.numRanks(), false);
    channelBusy_.assign(plan_.numChannels, false);
    channelWaiting_.assign(plan_.numChannels, {});
    linkLoad_.assign(links_.numLinks(), 0);
    stepsEnded_.assign(plan_.numRanks(), 0);
    if (plan_.hasCopyStreams()) {
      nextCompute_.resize(plan_.numRanks());
      nextCopy_.resize(plan_.numRanks());
      for (uint32_t r = 0; r < plan_.numRanks(); ++r) {
        nextCompute_[r] = skipTo(r, plan_.rankStep[r], false);
        nextCopy_[r] = skipTo(r, plan_.rankStep[r], true);
      }
    }
  }

  // Rank r's first step from `k` on that is on the copy stream (copy) or not.
  uint32_t skipTo(uint32_t r, uint32_t k, bool copy) const {
    uint32_t end = plan_.rankStep[r + 1];
    while (k < end && bool(plan_.copyStep[k]) != copy)
      ++k;
    return k;
  }

  double duration(uint32_t k) const {
    double d = stepDuration_ ? stepDuration_[k] : s_.classDuration[plan_.stepClass(k)];
    return plan_.stepScale.empty() ? d : d * plan_.stepScale[k]; // `sizes`
  }

  double transfer(uint32_t id) const {
    const Message &m = plan_.comm->messages[id];
    double t = plan_.messageTransfer(m, s_.stageTransfer, s_.moveTransfer);
    return plan_.messageScale.empty() ? t
                                      : SimulationPlan::scaledTransfer(
                                            t, stageLatency_[plan_.messageStage(m)],
                                            plan_.messageScale[id]);
  }

  void push(double time, uint32_t id, uint32_t rank, bool arrival) {
    events_.push({time, seq_++, id, rank, arrival});
  }

  // Starts rank r's next step if the rank is free and the step's inputs have
  // arrived; with copy streams, whatever either stream can start.
  void tryStart(uint32_t r) {
    if (plan_.hasCopyStreams()) {
      while (tryStartStream(r, true) | tryStartStream(r, false)) // both, every round
        ;
      return;
    }
    uint32_t k = s_.next[r];
    if (busy_[r] || k >= plan_.rankStep[r + 1] || result_.stepEnd[k] != 0)
      return;
    double start = k > plan_.rankStep[r] ? result_.stepEnd[k - 1] : 0.0;
    ++s_.next[r];
    startStep(r, k, start);
  }

  // Starts the next step of rank r's compute stream (copy: its copy stream) if
  // the stream is free, the step's inputs arrived and what it needs from the
  // other stream started: a compute step the Reload or Load it waits for, a
  // copy step the compute step before it (it is issued after that one).
  bool tryStartStream(uint32_t r, bool copy) {
    uint32_t &next = copy ? nextCopy_[r] : nextCompute_[r];
    uint32_t k = next;
    if ((!copy && busy_[r]) || k >= plan_.rankStep[r + 1] || result_.stepEnd[k] != 0)
      return false;
    uint32_t other = copy ? plan_.prevCompute[k] : plan_.waitsFor[k];
    if (other != SimulationPlan::kNoStep && other >= (copy ? nextCompute_[r] : nextCopy_[r]))
      return false;
    next = skipTo(r, k + 1, copy);
    startStep(r, k, plan_.readyAt(k, plan_.rankStep[r], result_.stepEnd));
    return true;
  }

  // Step k of rank r starts once its rank allows (`ready`) and its input arrived.
  void startStep(uint32_t r, uint32_t k, double ready) {
    uint32_t input = s_.latestInput[k];
    double start = input != kNoMessage ? std::max(ready, result_.messageArrived[input]) : ready;
    double finish = start + duration(k);
    result_.stepEnd[k] = finish;
    push(finish, k, r, false);
    if (plan_.onCopyStream(k))
      return; // copies overlap compute: not busy time, the compute stream goes on
    result_.ranks[r].busy += finish - start;
    busy_[r] = true;
  }

  void stepEnded(uint32_t r, uint32_t step, double now) {
    if (!plan_.onCopyStream(step))
      busy_[r] = false;
    const std::vector<Message> &messages = plan_.comm->messages;
    uint32_t id = s_.sendCursor[r];
    if (plan_.hasCopyStreams()) // steps end out of order: find the step's own messages
      id = uint32_t(std::lower_bound(messages.begin() + plan_.rankMessage[r],
                                     messages.begin() + plan_.rankMessage[r + 1], step,
                                     [&](const Message &m, uint32_t k) {
                                       return plan_.producerStep(m) < k;
                                     }) -
                    messages.begin());
    for (; id < plan_.rankMessage[r + 1] && plan_.producerStep(messages[id]) == step; ++id) {
      uint32_t channel = messages[id].channel;
      if (channelBusy_[channel])
        channelWaiting_[channel].push_back(id);
      else
        depart(id, now);
    }
    s_.sendCursor[r] = std::max(s_.sendCursor[r], id);
    bool last = ++stepsEnded_[r] == plan_.rankStep[r + 1] - plan_.rankStep[r];
    if (rankTraffic_ && last && rankTraffic_[r] > 0)
      startFlow({kNoMessage, r, now, rankTraffic_[r], 1.0, now, false, links_.nicPath(r)}, now);
    tryStart(r);
  }

  void depart(uint32_t id, double now) {
    const Message &m = plan_.comm->messages[id];
    channelBusy_[m.channel] = true;
    int32_t stage = plan_.messageStage(m);
    double time = transfer(id);
    double serial = std::max(0.0, time - stageLatency_[stage]);
    if (serial <= 0) { // latency only: nothing occupies a link
      result_.messageArrived[id] = now + time;
      push(result_.messageArrived[id], id, 0, true);
      return;
    }
    startFlow({id, 0, now, serial, 1.0, now, false,
               links_.path(plan_.comm->from(m), plan_.comm->to(m))},
              now);
  }

  void startFlow(const Flow &flow, double now) {
    advanceFlows(now);
    for (uint32_t link : flow.path.link)
      ++linkLoad_[link];
    flows_.push_back(flow);
    assignRates();
  }

  void flowDone(size_t which, double now) {
    advanceFlows(now);
    Flow flow = flows_[which];
    flows_.erase(flows_.begin() + long(which));
    for (uint32_t link : flow.path.link)
      --linkLoad_[link];
    assignRates();
    if (flow.message == kNoMessage) {
      result_.trafficEnd = std::max(result_.trafficEnd, now);
      return;
    }
    const Message &m = plan_.comm->messages[flow.message];
    int32_t stage = plan_.messageStage(m);
    // Unshared, it arrives exactly where the plain loop has it.
    double arrival = flow.slowed ? now + stageLatency_[stage] : flow.start + transfer(flow.message);
    result_.messageArrived[flow.message] = arrival;
    push(arrival, flow.message, 0, true);
  }

  void arrived(uint32_t id, double now) {
    const Message &m = plan_.comm->messages[id];
    std::deque<uint32_t> &waiting = channelWaiting_[m.channel];
    channelBusy_[m.channel] = false;
    if (!waiting.empty()) {
      uint32_t nextId = waiting.front();
      waiting.pop_front();
      depart(nextId, now);
    }
    uint32_t consumer = plan_.consumerStep(m);
    uint32_t &latest = s_.latestInput[consumer];
    if (latest == kNoMessage || result_.messageArrived[id] > result_.messageArrived[latest])
      latest = id;
    if (--result_.stepEnd[consumer] == 0)
      tryStart(uint32_t(plan_.comm->to(m)));
  }

  void advanceFlows(double now) {
    for (Flow &f : flows_) {
      f.remaining = std::max(0.0, f.remaining - f.rate * (now - f.updated));
      f.updated = now;
    }
  }

  void assignRates() {
    for (Flow &f : flows_) {
      double rate = 1.0;
      for (uint32_t link : f.path.link)
        rate = std::min(rate, links_.lanes(link) / linkLoad_[link]);
      f.rate = rate;
      f.slowed |= rate < 1.0;
    }
  }

  const SimulationPlan &plan_;
  const CostModel &costs_;
  const double *stepDuration_;
  const double *rankTraffic_;
  const LinkModel &links_;
  SimResult &result_;
  SimResult::Scratch &s_;
  std::vector<double> stageLatency_;
  std::vector<bool> busy_, channelBusy_;
  std::vector<std::deque<uint32_t>> channelWaiting_;
  std::vector<uint32_t> linkLoad_;
  std::vector<uint32_t> stepsEnded_;             // per rank
  std::vector<uint32_t> nextCompute_, nextCopy_; // with copy streams: each stream's next step
  std::vector<Flow> flows_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
};

} // namespace

void simulateContended(const SimulationPlan &plan, const CostModel &costs,
                       const SimPerturbation &perturbation, SimResult &result) {
  ContendedLoop(plan, costs, perturbation, result).run();
}

} // namespace pipec
