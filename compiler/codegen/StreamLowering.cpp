#include "codegen/StreamLowering.h"

#include "cost/CostModel.h"

#include <algorithm>
#include <cassert>
#include <map>

namespace pipec {

namespace {

// Builds one rank's command list.
class RankLowering {
public:
  RankLowering(const ScheduleIR &ir, const CommPlan &comm, const CostModel &costs, size_t rank)
      : comm_(comm), costs_(costs), rank_(rank), ops_(ir.ranks[rank].ops),
        inputs_(ops_.size()), outputs_(ops_.size()), produced_(comm.messages.size(), kNoEvent),
        arrived_(comm.messages.size(), kNoEvent),
        receivePosition_(comm.messages.size(), 0) {
    const RankComm &mine = comm.ranks[rank];
    for (size_t k = 0; k < mine.receives.size(); ++k) {
      uint32_t id = mine.receives[k];
      inputs_[comm.messages[id].consumer].push_back(id);
      receivePosition_[id] = k;
    }
    for (uint32_t id : mine.sends) {
      outputs_[comm.messages[id].producer].push_back(id);
      channelStream(comm.messages[id]);
    }
    for (uint32_t id : mine.receives)
      channelStream(comm.messages[id]);
  }

  RankStreamProgram run() {
    for (uint32_t i = 0; i < ops_.size(); ++i) {
      bool pair = ops_[i].pair == PairRole::First && i + 1 < ops_.size();
      uint32_t last = pair ? i + 1 : i;
      program_.steps.push_back({uint32_t(program_.commands.size()), i, last});
      if (ast::isMemoryOp(ops_[i].kind)) { // never half of a pair
        if (!inputs_[i].empty()) // a Hold or Load: its message first
          postReceivesFor(i, i);
        lowerCopy(i);
        if (!outputs_[i].empty()) { // an Evict or Return: its message goes on
          doneUpTo_ = i + 1;
          postSends();
        }
        continue;
      }
      postReceivesFor(i, last);
      waitCopies(i, last);
      if (pair)
        lowerPair(i, i + 1);
      else
        lowerSingle(i);
      doneUpTo_ = last + 1;
      postSends();
      i = last;
    }
    assert(nextSend_ == comm_.ranks[rank_].sends.size() &&
           nextReceive_ == comm_.ranks[rank_].receives.size());
    return std::move(program_);
  }

private:
  static constexpr uint32_t kNoEvent = ~0u;

  void emit(StreamCmd cmd, uint16_t stream, uint32_t arg, RunPart part = RunPart::Whole) {
    program_.commands.push_back({cmd, part, stream, arg});
  }
  uint32_t record(uint16_t stream) {
    uint32_t event = program_.numEvents++;
    emit(StreamCmd::RecordEvent, stream, event);
    return event;
  }
  void wait(uint16_t stream, uint32_t event) {
    assert(event != kNoEvent);
    emit(StreamCmd::WaitEvent, stream, event);
  }

  uint16_t channelStream(const Message &m) {
    auto [it, inserted] = channels_.try_emplace(comm_.channelKey(m), program_.numStreams);
    if (inserted) {
      ++program_.numStreams;
      bool sends = size_t(comm_.from(m)) == rank_;
      program_.channels.push_back(
          {sends ? comm_.to(m) : comm_.from(m), sends, m.kind == MessageKind::Gradient});
    }
    return it->second;
  }

  // Receives in proved order (sender's order per channel), up to the last one
  // that ops `first`..`last` consume; earlier ones on a channel are held.
  void postReceivesFor(uint32_t first, uint32_t last) {
    size_t until = nextReceive_;
    for (uint32_t op = first; op <= last; ++op)
      for (uint32_t id : inputs_[op])
        until = std::max(until, receivePosition_[id] + 1);
    const std::vector<uint32_t> &order = comm_.ranks[rank_].receives;
    for (; nextReceive_ < until; ++nextReceive_) {
      uint32_t id = order[nextReceive_];
      uint16_t stream = channelStream(comm_.messages[id]);
      emit(StreamCmd::Receive, stream, id);
      arrived_[id] = record(stream);
    }
  }

  // Sends in proved order, while the op producing the next one is done.
  void postSends() {
    const IdRange &order = comm_.ranks[rank_].sends;
    for (; nextSend_ < order.size(); ++nextSend_) {
      uint32_t id = order[nextSend_];
      const Message &m = comm_.messages[id];
      if (m.producer >= doneUpTo_)
        return;
      uint16_t stream = channelStream(m);
      wait(stream, produced_[id]);
      emit(StreamCmd::Send, stream, id);
    }
  }

  void waitInputs(uint32_t op, uint16_t stream) {
    for (uint32_t id : inputs_[op])
      wait(stream, arrived_[id]);
  }

  // The event after op `op`'s work on `stream`, for each message it produces
  // (`event` when one was just recorded there).
  void markProduced(uint32_t op, uint16_t stream, uint32_t event = kNoEvent) {
    if (outputs_[op].empty())
      return;
    if (event == kNoEvent)
      event = record(stream);
    for (uint32_t id : outputs_[op])
      produced_[id] = event;
  }

  // A memory op on the copy stream, after the compute stream's work so far
  // and (Hold, Load) its message's arrival; its event is the one an Evict's or
  // Return's send waits for (StreamLowering.h).
  void lowerCopy(uint32_t op) {
    if (program_.copyStream == 0)
      program_.copyStream = program_.numStreams++;
    uint16_t copy = program_.copyStream;
    wait(copy, record(kComputeStream));
    waitInputs(op, copy);
    emit(StreamCmd::Run, copy, op);
    OpKind kind = ops_[op].kind;
    bool leaves = kind == OpKind::Offload || kind == OpKind::Evict || kind == OpKind::Return;
    uint32_t event = record(copy);
    (leaves ? offloadDone_ : reloadDone_) = event;
    markProduced(op, copy, event);
  }

  // Before a step's forward, the copies that take an activation off the rank
  // (Offload, Evict, Return) not yet waited for; before its backward or W, the
  // ones that put one on it (Reload, Load, Hold). The copy stream runs in
  // order, so its latest event covers the copies before it.
  void waitCopies(uint32_t first, uint32_t last) {
    for (uint32_t op = first; op <= last; ++op) {
      OpKind kind = ops_[op].kind;
      uint32_t &pending = kind == OpKind::F || kind == OpKind::R ? offloadDone_ : reloadDone_;
      if (pending != kNoEvent) {
        wait(kComputeStream, pending);
        pending = kNoEvent;
      }
    }
  }

  void lowerSingle(uint32_t op) {
    waitInputs(op, kComputeStream);
    emit(StreamCmd::Run, kComputeStream, op);
    markProduced(op, kComputeStream);
  }

  void lowerPair(uint32_t forward, uint32_t backward) {
    ++program_.numPairs;
    // Fork: the communication stream sees everything the compute stream did.
    wait(kExpertStream, record(kComputeStream));
    OverlapPlan plan = planOverlap(costs_, ops_[forward].stage, ops_[backward].stage);
    uint32_t op[2] = {backward, forward};      // indexed by `isForward`
    int done[2] = {0, 0};                      // sub-operations run per half
    uint32_t handoff[2] = {kNoEvent, kNoEvent}; // event after a half's last sub-op
    uint16_t lastStream[2] = {0, 0};
    for (const PlannedSubOp &sub : plan.subOps) {
      int half = sub.forward;
      uint16_t stream = sub.onCommStream ? kExpertStream : kComputeStream;
      if (done[half] == 0)
        waitInputs(op[half], stream);
      else if (lastStream[half] != stream)
        wait(stream, handoff[half]);
      emit(StreamCmd::Run, stream, op[half], pipert::runPartOf(sub.op));
      lastStream[half] = stream;
      // The next sub-op of this half, or the sends after it, may run elsewhere.
      if (++done[half] < kSubOps)
        handoff[half] = record(stream);
    }
    // Join: the compute stream continues after both halves, and the sends of
    // each half wait for its last sub-operation.
    for (int half : {1, 0}) {
      uint16_t stream = lastStream[half];
      uint32_t event = kNoEvent;
      if (stream != kComputeStream)
        wait(kComputeStream, event = record(stream));
      markProduced(op[half], stream, event);
    }
  }

  const CommPlan &comm_;
  const CostModel &costs_;
  size_t rank_;
  const std::vector<Op> &ops_;
  std::vector<std::vector<uint32_t>> inputs_, outputs_; // per op: message ids consumed, produced
  std::vector<uint32_t> produced_, arrived_;  // per message: event ids
  std::vector<size_t> receivePosition_;       // per message: index in the receive order
  std::map<uint64_t, uint16_t> channels_;     // channel key -> stream
  size_t nextSend_ = 0, nextReceive_ = 0;
  uint32_t doneUpTo_ = 0;                     // ops [0, doneUpTo_) are lowered
  // The latest copy not yet waited for: one taking an activation off the rank
  // (Offload, Evict, Return), one putting it on (Reload, Load, Hold).
  uint32_t offloadDone_ = kNoEvent, reloadDone_ = kNoEvent;
  RankStreamProgram program_;
};

} // namespace

StreamPlanCosts streamPlanCosts(const ScheduleIR &ir, std::vector<CostOverride> overrides) {
  StreamPlanCosts result{CostModel::build(ir, overrides), overrides, {}};
  const CostModel &given = result.model;
  for (int64_t s = 0; s < ir.numStages; ++s) {
    if (given.hasSubOps(s))
      continue;
    result.defaultSplitStages.push_back(s);
    for (auto [suffix, kind] : {std::pair{"_f", OpKind::F}, std::pair{"_b", OpKind::B}}) {
      double op = given.op(kind, s);
      for (auto [name, share] : {std::pair{"attn", 0.5}, std::pair{"mlp", 0.5},
                                 std::pair{"dispatch", 0.25}, std::pair{"combine", 0.25}})
        overrides.push_back({std::string(name) + suffix, s, share * op});
    }
  }
  if (!result.defaultSplitStages.empty())
    result.model = CostModel::build(ir, overrides);
  return result;
}

std::vector<RankStreamProgram> lowerToStreams(const ScheduleIR &ir, const CheckReport &report,
                                              const CostModel &costs) {
  assert(report.ok && report.comm);
  std::vector<RankStreamProgram> programs;
  for (size_t r = 0; r < ir.ranks.size(); ++r)
    programs.push_back(RankLowering(ir, *report.comm, costs, r).run());
  return programs;
}

} // namespace pipec
