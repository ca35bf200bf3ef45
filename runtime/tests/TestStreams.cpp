#include "TestStreams.h"

#include <algorithm>
#include <map>
#include <utility>

namespace pipert::test {

namespace {

constexpr uint32_t kNone = ~0u;

class RankLowering {
public:
  RankLowering(const Program &program, int rank) : program_(program), table_(program.ranks[rank]) {
    inputs_.resize(table_.numOps);
    outputs_.resize(table_.numOps);
    produced_.assign(program.numMessages, kNone);
    arrived_.assign(program.numMessages, kNone);
    position_.assign(program.numMessages, 0);
    for (uint32_t k = 0; k < table_.numReceives; ++k) {
      uint32_t id = table_.receives[k];
      inputs_[program.messages[id].consumerOp].push_back(id);
      position_[id] = k;
      stream(id);
    }
    for (uint32_t k = 0; k < table_.numSends; ++k) {
      uint32_t id = table_.sends[k];
      outputs_[program.messages[id].producerOp].push_back(id);
      stream(id);
    }
  }

  RankStreams lower(std::vector<StreamCommand> &out) {
    for (uint32_t i = 0; i < table_.numOps; ++i) {
      bool pair = table_.ops[i].pairedWithNext && i + 1 < table_.numOps;
      uint32_t last = pair ? i + 1 : i;
      postReceives(i, last);
      if (pair)
        lowerPair(i, i + 1);
      else
        lowerSingle(i);
      done_ = last + 1;
      postSends();
      i = last;
    }
    out = commands_;
    return {nullptr, uint32_t(out.size()), numStreams_, numEvents_};
  }

private:
  uint16_t stream(uint32_t id) {
    auto [it, added] = streams_.try_emplace(channelKey(program_.messages[id]), numStreams_);
    if (added)
      ++numStreams_;
    return it->second;
  }
  void emit(StreamCmd cmd, uint16_t stream, uint32_t arg, RunPart part = RunPart::Whole) {
    commands_.push_back({cmd, part, stream, arg});
  }
  uint32_t record(uint16_t stream) {
    emit(StreamCmd::RecordEvent, stream, numEvents_);
    return numEvents_++;
  }
  void waitInputs(uint32_t op, uint16_t stream) {
    for (uint32_t id : inputs_[op])
      emit(StreamCmd::WaitEvent, stream, arrived_[id]);
  }
  void markProduced(uint32_t op, uint32_t event) {
    for (uint32_t id : outputs_[op])
      produced_[id] = event;
  }

  void postReceives(uint32_t first, uint32_t last) {
    uint32_t until = next_receive_;
    for (uint32_t op = first; op <= last; ++op)
      for (uint32_t id : inputs_[op])
        until = std::max(until, position_[id] + 1);
    for (; next_receive_ < until; ++next_receive_) {
      uint32_t id = table_.receives[next_receive_];
      emit(StreamCmd::Receive, stream(id), id);
      arrived_[id] = record(stream(id));
    }
  }
  void postSends() {
    for (; next_send_ < table_.numSends; ++next_send_) {
      uint32_t id = table_.sends[next_send_];
      if (program_.messages[id].producerOp >= done_)
        return;
      emit(StreamCmd::WaitEvent, stream(id), produced_[id]);
      emit(StreamCmd::Send, stream(id), id);
    }
  }

  void lowerSingle(uint32_t op) {
    waitInputs(op, kComputeStream);
    emit(StreamCmd::Run, kComputeStream, op);
    if (!outputs_[op].empty())
      markProduced(op, record(kComputeStream));
  }

  // The two halves' parts interleaved: compute parts on stream 0, the
  // all-to-alls on the expert stream.
  void lowerPair(uint32_t forward, uint32_t backward) {
    emit(StreamCmd::WaitEvent, kExpertStream, record(kComputeStream));
    const std::pair<int, SubOp> plan[] = {{0, SubOp::Combine}, {1, SubOp::Attention},
                                          {1, SubOp::Dispatch}, {0, SubOp::Mlp},
                                          {1, SubOp::Mlp},      {0, SubOp::Dispatch},
                                          {1, SubOp::Combine},  {0, SubOp::Attention}};
    uint32_t op[2] = {backward, forward};
    int done[2] = {0, 0};
    uint32_t handoff[2] = {kNone, kNone};
    uint16_t lastStream[2] = {0, 0};
    for (auto [half, sub] : plan) {
      uint16_t s = sub == SubOp::Dispatch || sub == SubOp::Combine ? kExpertStream : kComputeStream;
      if (done[half] == 0)
        waitInputs(op[half], s);
      else if (lastStream[half] != s)
        emit(StreamCmd::WaitEvent, s, handoff[half]);
      emit(StreamCmd::Run, s, op[half], runPartOf(sub));
      lastStream[half] = s;
      if (++done[half] < 4)
        handoff[half] = record(s);
    }
    for (int half : {1, 0}) {
      uint32_t event = record(lastStream[half]);
      if (lastStream[half] != kComputeStream)
        emit(StreamCmd::WaitEvent, kComputeStream, event);
      markProduced(op[half], event);
    }
  }

  const Program &program_;
  const RankTable &table_;
  std::vector<std::vector<uint32_t>> inputs_, outputs_;
  std::vector<uint32_t> produced_, arrived_, position_;
  std::map<uint64_t, uint16_t> streams_;
  std::vector<StreamCommand> commands_;
  uint16_t numStreams_ = kFirstChannelStream;
  uint32_t numEvents_ = 0, next_receive_ = 0, next_send_ = 0, done_ = 0;
};

} // namespace

OwnedStreams lowerForTest(const Program &program) {
  OwnedStreams owned;
  owned.commands.resize(program.numRanks);
  for (int r = 0; r < program.numRanks; ++r)
    owned.ranks.push_back(RankLowering(program, r).lower(owned.commands[r]));
  for (int r = 0; r < program.numRanks; ++r)
    owned.ranks[r].commands = owned.commands[r].data();
  owned.program.ranks = owned.ranks.data();
  return owned;
}

} // namespace pipert::test
