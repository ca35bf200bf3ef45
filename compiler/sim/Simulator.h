// Event-driven simulation of a checked schedule under a cost model, using the
// communication model of comm/CommPlan.h (the one the checker proved): each rank
// runs its steps in order; a step starts when the rank is free and its inputs
// have arrived; a message leaves when its step ends, and travels after the
// previous message of its channel (latency + size / bandwidth).
//
// Two parts, so one schedule can be re-simulated under many cost sets cheaply:
//   - SimulationPlan: what the event loop needs, as flat arrays, built once from
//     the schedule and its communication plan;
//   - simulate(plan, costs, result): looks up one duration per distinct step kind
//     and runs the loop; reusing `result` allocates nothing after the first run.
// A run may also take one duration per step instead of its kind's (jitter and
// stragglers, sim/Variability.h) and a link model under which messages that
// share a network link share its bandwidth (sim/LinkModel.h). Without them the
// loop is the one above, unchanged to the last bit.
//
// Memory ops (Offload ... Load) run on the rank's copy stream, beside its compute
// stream: a copy step is issued in program order, once the compute step before
// it has ended, and starts when the copy stream is free too (and, for Hold and
// Load, once its message arrived); it is not busy time. A compute step starts
// when the previous compute step has ended, its message has arrived, and, for a
// B or I whose activation was reloaded or loaded, when that copy has ended.
// Evict -> Hold and Return -> Load messages take the `Evict` / `Load` costs on
// the link, on channels of their own.
#pragma once

#include "check/Checks.h"
#include "cost/CostModel.h"

#include <algorithm>
#include <memory>
#include <vector>

namespace pipec {

// A kind of step whose duration the cost model gives: one op, or an overlap pair.
struct StepClass {
  OpKind kind;          // the op's, or the pair's backward kind
  bool pair;
  int32_t stage;        // the op's, or the pair's backward stage
  int32_t forwardStage; // pairs only
};

// Steps are numbered globally, rank after rank; messages are CommPlan's (read in
// place, not copied: the plan must not outlive the CommPlan it was built from).
struct SimulationPlan {
  const CommPlan *comm = nullptr;
  std::vector<uint32_t> rankStep;        // rank -> its first step; one more entry at the end
  // step -> index into classes: 16 bits while the classes fit (they almost always
  // do: 2 bytes a step at 10M ops), widened once when they do not.
  std::vector<uint16_t> stepClassNarrow;
  std::vector<uint32_t> stepClassWide;
  std::vector<uint32_t> rankMessage;     // rank -> its first message sent; one more entry
  std::vector<StepClass> classes;
  uint32_t numChannels = 0;
  int64_t numStages = 0;
  // With `sizes`: each step's and each message's factor on its cost (the
  // micro-batch's size; a pair's, the mean of its two). Empty: every factor is 1.
  // A message's factor scales its bytes, not its latency (scaledTransfer).
  std::vector<double> stepScale;
  std::vector<double> messageScale;
  // A transfer of `transfer` seconds, `latency` of them fixed, for a micro-batch
  // `scale` times the unit: the fixed part once, the rest scaled.
  static double scaledTransfer(double transfer, double latency, double scale) {
    double bytes = std::max(0.0, transfer - latency);
    return transfer - bytes + bytes * scale;
  }
  // With memory ops (empty otherwise: a rank's steps then run one after another):
  // per global step, the rank's previous compute step, its previous copy step,
  // and the copy step a B or I waits for (kNoStep: none), and whether the step
  // itself is on the copy stream. Memory-op classes follow the F..R classes.
  static constexpr uint32_t kNoStep = ~0u;
  std::vector<uint32_t> prevCompute, prevCopy, waitsFor;
  std::vector<uint8_t> copyStep;
  uint32_t memoryClassBase = 0;

  bool hasCopyStreams() const { return !copyStep.empty(); }
  bool onCopyStream(uint32_t global) const { return !copyStep.empty() && copyStep[global]; }
  // When global step k (of the rank whose first step is `rankFirst`) can start as
  // far as its own rank is concerned (its stream, and the copy it waits for),
  // given the ends of the rank's earlier steps; messages aside. `from` is the
  // step that decides it (kNoStep: time 0).
  double readyAt(uint32_t k, uint32_t rankFirst, const std::vector<double> &stepEnd,
                 uint32_t *from = nullptr) const {
    if (copyStep.empty()) {
      bool first = k == rankFirst;
      if (from)
        *from = first ? kNoStep : k - 1;
      return first ? 0.0 : stepEnd[k - 1];
    }
    double t = 0;
    uint32_t by = kNoStep;
    auto after = [&](uint32_t step) {
      if (step != kNoStep && (by == kNoStep || stepEnd[step] > t)) {
        t = std::max(t, stepEnd[step]);
        by = step;
      }
    };
    after(prevCompute[k]);
    if (copyStep[k])
      after(prevCopy[k]);
    after(waitsFor[k]);
    if (from)
      *from = by;
    return t;
  }

  uint32_t stepClass(uint32_t global) const {
    return stepClassWide.empty() ? stepClassNarrow[global] : stepClassWide[global];
  }
  void appendStepClass(uint32_t c);

  size_t numRanks() const { return rankStep.size() - 1; }
  size_t numSteps() const { return rankStep.back(); }
  // The first op of a global step on its rank (a pair: the F), read from the CommPlan.
  uint32_t stepOp(uint32_t global) const {
    size_t rank = rankOfStep(global);
    return comm->ranks[rank].stepOp[global - rankStep[rank]];
  }
  size_t rankOfStep(uint32_t global) const {
    return std::upper_bound(rankStep.begin(), rankStep.end(), global) - rankStep.begin() - 1;
  }
  size_t numMessages() const { return comm->messages.size(); }
  uint32_t producerStep(const Message &m) const { return rankStep[comm->from(m)] + m.producerStep; }
  uint32_t consumerStep(const Message &m) const { return rankStep[comm->to(m)] + m.consumerStep; }
  // The stage that produced `m`, from its step's class (messages do not store it):
  // a pair's activation comes from its forward, its gradient from its backward.
  // An evicted or returned activation is its stage's.
  int32_t messageStage(const Message &m) const {
    const StepClass &c = classes[stepClass(producerStep(m))];
    return c.pair && m.kind == MessageKind::Activation ? c.forwardStage : c.stage;
  }
  // `m`'s time on the link under per-run tables: activations and gradients take
  // their stage's transfer, evicted and returned activations the Evict / Load costs.
  double messageTransfer(const Message &m, const std::vector<double> &stageTransfer,
                         const std::vector<double> &moveTransfer) const {
    int32_t stage = messageStage(m);
    if (m.kind == MessageKind::Evicted)
      return moveTransfer[2 * size_t(stage)];
    if (m.kind == MessageKind::Returned)
      return moveTransfer[2 * size_t(stage) + 1];
    return stageTransfer[stage];
  }
};

SimulationPlan buildSimulationPlan(const ScheduleIR &ir, const CommPlan &comm);

struct StepTiming {
  uint32_t op;         // first op of the step (a pair: its forward)
  double start, end;
};

struct RankTiming {
  double busy = 0;          // sum of step durations
  double bubble = 0;        // makespan - busy
  double utilization = 0;   // busy / makespan
};

// One link of the critical path: a step, and what made it start when it did.
struct CriticalLink {
  int32_t rank;
  uint32_t step; // global step number
};

struct SimResult {
  std::shared_ptr<const SimulationPlan> plan;
  double makespan = 0;
  std::vector<RankTiming> ranks;
  std::vector<double> stepEnd;                   // by global step
  std::vector<double> messageArrived;            // indexed like CommPlan::messages
  // When message `id` left: after its step, behind the previous one on its channel.
  // Computed on the fly, in id order (channelFree: numChannels zeros to start with).
  double sent(uint32_t id, std::vector<double> &channelFree) const {
    const Message &m = plan->comm->messages[id];
    double &free = channelFree[m.channel];
    double at = std::max(stepEnd[plan->producerStep(m)], free);
    free = messageArrived[id];
    return at;
  }
  // When global step k started: once its rank was free and its latest input had
  // arrived. Recomputed as the event loop computed it (max is exact), so no array
  // of starts is kept.
  double stepStart(uint32_t k) const;
  std::vector<CriticalLink> criticalPath;        // first step to last
  // Runs with rank traffic (SimPerturbation::rankTraffic): when the last of it
  // ended, at least the makespan. Otherwise the makespan.
  double trafficEnd = 0;
  double totalBusy() const;
  double totalBubble() const;

  // Rank r's steps are [firstStep(r), endStep(r)).
  uint32_t firstStep(size_t rank) const { return plan->rankStep[rank]; }
  uint32_t endStep(size_t rank) const { return plan->rankStep[rank + 1]; }
  StepTiming step(uint32_t global) const {
    return {plan->stepOp(global), stepStart(global), stepEnd[global]};
  }

  // Scratch of the event loop, kept so a re-run allocates nothing.
  struct Scratch {
    std::vector<double> classDuration, stageTransfer, stageLatency, channelFree;
    std::vector<double> moveTransfer; // [2 * stage + (0: Evict, 1: Load)], with memory ops
    std::vector<uint32_t> latestInput, next, sendCursor, ready;
  } scratch;
};

class LinkModel;

// What one run changes from the cost model's quiet cluster. Empty: the plain loop.
struct SimPerturbation {
  // One duration per global step (plan.numSteps() entries) in place of its class's.
  const double *stepDuration = nullptr;
  // Messages occupy the links on their paths and share them (ContendedLoop.cpp).
  const LinkModel *links = nullptr;
  // With links: per rank, seconds of traffic (at the full rate of its NIC) that the
  // rank sends and receives once its last step ends, e.g. its data-parallel
  // gradient reduction; it shares the NIC with the pipeline's messages.
  const double *rankTraffic = nullptr;
};

// Runs `plan` under `costs` into `result`, reusing its storage.
void simulate(std::shared_ptr<const SimulationPlan> plan, const CostModel &costs,
              SimResult &result, const SimPerturbation &perturbation = {});

// Each step's duration under `costs`, as the plain loop takes it (its class's),
// into `out` (numSteps entries): the base that perturbations scale.
void stepDurations(const SimulationPlan &plan, const CostModel &costs, std::vector<double> &out);

// Builds the plan and runs it once. Requires a report whose checks passed (report.comm is set).
SimResult simulate(const ScheduleIR &ir, const CheckReport &report, const CostModel &costs);

} // namespace pipec
