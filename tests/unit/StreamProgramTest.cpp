// The CUDA backend's stream programs (codegen/StreamLowering), run by an
// independent model of CUDA stream semantics: each stream runs its commands in
// order; a WaitEvent holds its stream until its RecordEvent has run; a Send and
// the Receive of the same message, each at the front of its channel stream,
// complete together (rendezvous); Run takes a random time. Under many random
// durations, every op must start only after everything it reads is complete
// (its input, its own earlier sub-operations, its forward's stored state), every
// Send only after its op, and every command must run (no deadlock). A missing
// event edge shows up as a consumer that starts before its producer ends.
#include "check/Checks.h"
#include "codegen/StreamLowering.h"

#include "ScheduleGenerator.h"
#include "TestSupport.h"

#include <catch2/catch.hpp>

#include <deque>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <tuple>

using namespace pipec;
using namespace pipec::test;

namespace {

struct Lowered {
  std::unique_ptr<Compiled> compiled;
  CheckReport report;
  std::vector<RankStreamProgram> programs;
};

// Plans from the CUDA emitter's cost model (streamPlanCosts), or with
// `zeroSubOps` from the plain model, where unset sub-operation costs are 0 (a
// pair then runs one half after the other: a different command order).
Lowered lowerSource(const std::string &source, int P, int M,
                    const std::vector<CostOverride> &costs, bool zeroSubOps = false) {
  Lowered l;
  ElabOptions options;
  options.defines = {{"P", P}, {"M", M}};
  l.compiled = compile(source, options);
  REQUIRE(l.compiled->ir);
  l.report = runChecks(*l.compiled->ir, CheckOptions{}, l.compiled->diags);
  REQUIRE(l.report.ok);
  const ScheduleIR &ir = *l.compiled->ir;
  l.programs = lowerToStreams(ir, l.report, zeroSubOps ? CostModel::build(ir, costs)
                                                       : streamPlanCosts(ir, costs).model);
  return l;
}

Lowered lower(const std::string &name, int P, int M, const std::vector<CostOverride> &costs,
              bool zeroSubOps = false) {
  return lowerSource(readExample(name), P, M, costs, zeroSubOps);
}

// Commands that must have run before (rank, op, part) may start, as times.
class StreamModel {
public:
  StreamModel(const Lowered &l, std::mt19937 &random) : l_(l), ir_(*l.compiled->ir),
      comm_(*l.report.comm), random_(random) {
    for (size_t r = 0; r < ir_.ranks.size(); ++r)
      for (uint32_t i = 0; i < ir_.ranks[r].ops.size(); ++i) {
        const Op &op = ir_.ranks[r].ops[i];
        where_[{int(op.kind), op.stage, op.microbatch}] = {int(r), i};
      }
    for (uint32_t id = 0; id < comm_.messages.size(); ++id)
      input_[{comm_.to(comm_.messages[id]), comm_.messages[id].consumer}].push_back(id);
    streams_.resize(ir_.ranks.size());
    eventTime_.resize(ir_.ranks.size());
    for (size_t r = 0; r < ir_.ranks.size(); ++r) {
      const RankStreamProgram &p = l.programs[r];
      streams_[r].resize(p.numStreams);
      eventTime_[r].assign(p.numEvents, -1);
      for (const StreamCommand &c : p.commands) {
        REQUIRE(c.stream < p.numStreams);
        streams_[r][c.stream].queue.push_back(c);
      }
    }
  }

  // Runs everything; returns a description of the first violation, or "".
  std::string run() {
    for (bool progressed = true; progressed;) {
      progressed = false;
      for (size_t r = 0; r < streams_.size(); ++r)
        for (size_t s = 0; s < streams_[r].size(); ++s)
          while (!streams_[r][s].queue.empty() && step(int(r), s))
            progressed = true;
      if (!failure_.empty())
        return failure_;
    }
    for (size_t r = 0; r < streams_.size(); ++r)
      for (size_t s = 0; s < streams_[r].size(); ++s)
        if (!streams_[r][s].queue.empty())
          return "deadlock: rank " + std::to_string(r) + " stream " + std::to_string(s) +
                 " is stuck at a " + streamCmdName(streams_[r][s].queue.front().cmd);
    for (size_t r = 0; r < ir_.ranks.size(); ++r)
      for (uint32_t i = 0; i < ir_.ranks[r].ops.size(); ++i)
        if (!opEnd_.count({int(r), i}))
          return "op " + std::to_string(i) + " of rank " + std::to_string(r) + " never ran";
    return "";
  }

private:
  struct Stream {
    std::deque<StreamCommand> queue;
    double clock = 0;
  };
  using OpKey = std::pair<int, uint32_t>;

  double duration(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(random_);
  }

  void fail(const std::string &what) {
    if (failure_.empty())
      failure_ = what;
  }

  // Whether op (rank, i) finished by `time`; a producer that has not run at all
  // means no edge orders it before the consumer.
  void requireDone(OpKey producer, double time, const std::string &consumer) {
    auto it = opEnd_.find(producer);
    if (it == opEnd_.end() || it->second > time)
      fail(consumer + " starts before op " + std::to_string(producer.second) + " of rank " +
           std::to_string(producer.first) + " ends");
  }

  void checkInputs(int r, uint32_t i, double start) {
    const Op &op = ir_.ranks[r].ops[i];
    std::string self = "op " + std::to_string(i) + " of rank " + std::to_string(r);
    auto messages = input_.find({r, i});
    if (messages != input_.end()) {
      for (uint32_t id : messages->second) {
        auto arrived = recvEnd_.find(id);
        if (arrived == recvEnd_.end() || arrived->second > start)
          fail(self + " starts before message " + std::to_string(id) + " arrived");
      }
    } else if (op.kind == OpKind::F && op.stage > 0) {
      requireDone(where_.at({int(OpKind::F), op.stage - 1, op.microbatch}), start, self);
    } else if ((op.kind == OpKind::B || op.kind == OpKind::I) && op.stage + 1 < ir_.numStages) {
      auto b = where_.find({int(OpKind::B), op.stage + 1, op.microbatch});
      if (b == where_.end())
        b = where_.find({int(OpKind::I), op.stage + 1, op.microbatch});
      requireDone(b->second, start, self);
    }
    if (op.kind != OpKind::F)
      requireDone(where_.at({int(OpKind::F), op.stage, op.microbatch}), start, self);
    if (op.kind == OpKind::W)
      requireDone(where_.at({int(OpKind::I), op.stage, op.microbatch}), start, self);
  }

  // Runs the front command of stream s of rank r if it can run now.
  bool step(int r, size_t s) {
    Stream &stream = streams_[r][s];
    const StreamCommand c = stream.queue.front();
    switch (c.cmd) {
    case StreamCmd::RecordEvent:
      if (eventTime_[r][c.arg] >= 0)
        fail("event " + std::to_string(c.arg) + " of rank " + std::to_string(r) +
             " is recorded twice");
      eventTime_[r][c.arg] = stream.clock;
      break;
    case StreamCmd::WaitEvent:
      if (eventTime_[r][c.arg] < 0)
        return false;
      stream.clock = std::max(stream.clock, eventTime_[r][c.arg]);
      break;
    case StreamCmd::Run: {
      OpKey key{r, c.arg};
      int &parts = partsDone_[key];
      double start = stream.clock;
      if (parts == 0)
        checkInputs(r, c.arg, start);
      else if (partEnd_[key] > start)
        fail("a sub-operation of op " + std::to_string(c.arg) + " of rank " +
             std::to_string(r) + " starts before the previous one ends");
      stream.clock = start + duration(0.1, 3);
      parts += c.part == RunPart::Whole ? kSubOps : 1;
      partEnd_[key] = stream.clock;
      if (parts >= kSubOps)
        opEnd_[key] = stream.clock;
      break;
    }
    case StreamCmd::Send:
    case StreamCmd::Receive: {
      const Message &m = comm_.messages[c.arg];
      bool send = c.cmd == StreamCmd::Send;
      if (send && !pendingRecv_.count(c.arg)) {
        pendingSend_[c.arg] = {r, s};
        return false;
      }
      if (!send && !pendingSend_.count(c.arg)) {
        pendingRecv_[c.arg] = {r, s};
        return false;
      }
      auto [peerRank, peerStream] = send ? pendingRecv_[c.arg] : pendingSend_[c.arg];
      Stream &peer = streams_[peerRank][peerStream];
      if (peer.queue.empty() || peer.queue.front().arg != c.arg)
        return false; // the peer's stream has not reached it yet
      Stream &sender = send ? stream : peer;
      requireDone({comm_.from(m), m.producer}, sender.clock,
                  "the send of message " + std::to_string(c.arg));
      double end = std::max(stream.clock, peer.clock) + duration(0.1, 2);
      stream.clock = peer.clock = end;
      recvEnd_[c.arg] = end;
      peer.queue.pop_front();
      pendingSend_.erase(c.arg);
      pendingRecv_.erase(c.arg);
      break;
    }
    }
    stream.queue.pop_front();
    return true;
  }

  const Lowered &l_;
  const ScheduleIR &ir_;
  const CommPlan &comm_;
  std::mt19937 &random_;
  std::map<std::tuple<int, int, int>, OpKey> where_; // (kind, stage, mb) -> op
  std::map<OpKey, std::vector<uint32_t>> input_;     // op -> messages it consumes
  std::vector<std::vector<Stream>> streams_;
  std::vector<std::vector<double>> eventTime_;
  std::map<OpKey, int> partsDone_;
  std::map<OpKey, double> partEnd_, opEnd_;
  std::map<uint32_t, double> recvEnd_;
  std::map<uint32_t, std::pair<int, size_t>> pendingSend_, pendingRecv_;
  std::string failure_;
};

// Static rules: a WaitEvent comes after its RecordEvent in the command order
// (a CUDA wait on an unrecorded event does not wait), every event is recorded
// once, and every message is sent and received exactly once.
void checkStatic(const Lowered &l) {
  std::map<uint32_t, int> sends, receives;
  for (size_t r = 0; r < l.programs.size(); ++r) {
    const RankStreamProgram &p = l.programs[r];
    std::vector<int> recorded(p.numEvents, 0);
    for (const StreamCommand &c : p.commands) {
      if (c.cmd == StreamCmd::RecordEvent)
        ++recorded.at(c.arg);
      if (c.cmd == StreamCmd::WaitEvent)
        CHECK(recorded.at(c.arg) == 1);
      if (c.cmd == StreamCmd::Send)
        ++sends[c.arg];
      if (c.cmd == StreamCmd::Receive)
        ++receives[c.arg];
    }
    for (int count : recorded)
      CHECK(count == 1);
  }
  CHECK(sends.size() == l.report.comm->messages.size());
  CHECK(receives.size() == l.report.comm->messages.size());
  for (auto &[id, count] : sends)
    CHECK(count == 1);
  for (auto &[id, count] : receives)
    CHECK(count == 1);
}

// What an emitted program's comments say: each channel stream's legend entry
// (peer, direction, kind) fits every message moved on it, and the steps cover
// the rank's ops in order, each with its commands, one op or an overlap pair.
void checkLegendAndSteps(const Lowered &l) {
  const CommPlan &comm = *l.report.comm;
  for (size_t r = 0; r < l.programs.size(); ++r) {
    const RankStreamProgram &p = l.programs[r];
    REQUIRE(p.channels.size() + kFirstChannelStream == p.numStreams);
    for (const StreamCommand &c : p.commands) {
      if (c.cmd != StreamCmd::Send && c.cmd != StreamCmd::Receive)
        continue;
      REQUIRE(c.stream >= kFirstChannelStream);
      const StreamChannel &channel = p.channels[c.stream - kFirstChannelStream];
      const Message &m = comm.messages[c.arg];
      CHECK(channel.sends == (c.cmd == StreamCmd::Send));
      CHECK(channel.peer == (channel.sends ? comm.to(m) : comm.from(m)));
      CHECK(channel.gradient == (m.kind == MessageKind::Gradient));
    }
    const std::vector<Op> &ops = l.compiled->ir->ranks[r].ops;
    uint32_t nextOp = 0, nextCommand = 0;
    for (const StreamStep &step : p.steps) {
      CHECK(step.firstOp == nextOp);
      CHECK(step.lastOp == (ops[step.firstOp].pair == PairRole::First ? nextOp + 1 : nextOp));
      CHECK(step.firstCommand >= nextCommand);
      nextOp = step.lastOp + 1;
      nextCommand = step.firstCommand + 1;
    }
    CHECK(nextOp == ops.size());
  }
}

const std::vector<CostOverride> kSubOpCosts = {
    {"attn_f", -1, 1}, {"dispatch_f", -1, 1}, {"mlp_f", -1, 1}, {"combine_f", -1, 1},
    {"attn_b", -1, 2}, {"dispatch_b", -1, 1}, {"mlp_b", -1, 2}, {"combine_b", -1, 1}};

} // namespace

TEST_CASE("stream programs of every library schedule respect every dependency", "[codegen]") {
  struct Case {
    const char *name;
    int P, M;
  };
  const Case cases[] = {{"gpipe", 4, 6},    {"1f1b", 4, 6},   {"interleaved_1f1b", 4, 8},
                        {"zb_h1", 4, 6},    {"zbv", 4, 9},    {"chimera", 4, 8},
                        {"dualpipe", 4, 10}, {"dualpipe", 8, 20}, {"dualpipev", 4, 9},
                        {"dualpipev", 8, 17}, {"1f1b", 2, 2},  {"dualpipe", 2, 4},
                        {"zb_h2", 4, 10}};
  std::mt19937 random(20261130);
  enum Costs { DefaultSplit, Measured, Zero };
  for (const Case &c : cases)
    for (Costs costs : {DefaultSplit, Measured, Zero}) {
      Lowered l = lower(c.name, c.P, c.M, costs == Measured ? kSubOpCosts : std::vector<CostOverride>{},
                        costs == Zero);
      INFO(c.name << " P=" << c.P << " M=" << c.M << " costs " << int(costs));
      checkStatic(l);
      checkLegendAndSteps(l);
      for (int trial = 0; trial < 10; ++trial)
        CHECK(StreamModel(l, random).run() == "");
    }
}

// The same model over random schedules (ScheduleGenerator.h): valid ones and
// mutated ones the checks still accept. The CPU executor runs the same
// programs (ExecutorPropertyTest.cpp).
TEST_CASE("stream programs of random schedules respect every dependency", "[codegen][property]") {
  ScheduleGenerator gen(0x57e4a001u);
  std::mt19937 random(20261201);
  int lowered = 0;
  for (int c = 0; c < 300; ++c) {
    GenSchedule g = gen.valid();
    if (c % 3 == 0)
      gen.mutate(g);
    Lowered l;
    l.compiled = compile(g.source());
    if (!l.compiled->ir || l.compiled->diags.hasErrors())
      continue;
    const ScheduleIR &ir = *l.compiled->ir;
    l.report = runChecks(ir, CheckOptions{}, l.compiled->diags);
    if (!l.report.ok)
      continue;
    l.programs = lowerToStreams(ir, l.report, streamPlanCosts(ir, {}).model);
    INFO("case " << c << " (" << g.history << "):\n" << g.source());
    checkStatic(l);
    for (int trial = 0; trial < 3; ++trial)
      CHECK(StreamModel(l, random).run() == "");
    ++lowered;
  }
  CHECK(lowered >= 200);
}

TEST_CASE("overlap pairs put the all-to-alls on the expert stream, fork and join", "[codegen]") {
  Lowered l = lower("dualpipe", 4, 10, kSubOpCosts);
  const RankStreamProgram &rank0 = l.programs[0];
  CHECK(rank0.numPairs > 0);
  int dispatchOrCombine = 0, computeParts = 0;
  for (const StreamCommand &c : rank0.commands) {
    if (c.cmd != StreamCmd::Run || c.part == RunPart::Whole)
      continue;
    bool comm = c.part == RunPart::Dispatch || c.part == RunPart::Combine;
    CHECK(c.stream == (comm ? kExpertStream : kComputeStream));
    (comm ? dispatchOrCombine : computeParts)++;
  }
  CHECK(dispatchOrCombine == 4 * int(rank0.numPairs));
  CHECK(computeParts == 4 * int(rank0.numPairs));
}

TEST_CASE("without sub-operation costs the plan still interleaves the halves", "[codegen]") {
  // The default split (attention and MLP half an op each, all-to-alls a
  // quarter) puts the forward's attention right after the backward's combine,
  // as with the measured costs of the OverlapPlan test: C_b A_f M_b D_f M_f D_b A_b C_f.
  for (const std::vector<CostOverride> &costs : {std::vector<CostOverride>{}, kSubOpCosts}) {
    Lowered l = lower("dualpipe", 4, 10, costs);
    std::string order; // rank 0's first pair: ops 7 (F) and 8 (B)
    for (const StreamCommand &c : l.programs[0].commands)
      if (c.cmd == StreamCmd::Run && (c.arg == 7 || c.arg == 8))
        order += std::string(runPartName(c.part)) + (c.arg == 8 ? "_b " : "_f ");
    CHECK(order == "Comb_b Attn_f Mlp_b Disp_f Mlp_f Disp_b Attn_b Comb_f ");
  }
}

TEST_CASE("a model without the events finds the race the events prevent", "[codegen]") {
  // The checker must be able to fail: drop every Wait and some consumer starts
  // before its producer ends under random durations.
  Lowered l = lower("dualpipe", 4, 10, kSubOpCosts);
  for (RankStreamProgram &p : l.programs) {
    std::vector<StreamCommand> kept;
    for (const StreamCommand &c : p.commands)
      if (c.cmd != StreamCmd::WaitEvent)
        kept.push_back(c);
    p.commands = kept;
  }
  std::mt19937 random(7);
  int failures = 0;
  for (int trial = 0; trial < 10; ++trial)
    failures += StreamModel(l, random).run() != "";
  CHECK(failures > 0);
}

TEST_CASE("orders consumed unlike sent: receives in the sender's order, early messages held",
          "[codegen]") {
  // Rank 1 runs each pair of forwards in the other order and rank 2 its
  // backwards last to first: their peers' messages arrive before the ops that
  // need them. Each channel's receives are posted in its sender's order, and
  // every op still starts only after its own message arrived.
  const std::string source = R"(
schedule swaps(P = 4, M = 8) {
  ranks P; stages P; microbatches M;
  place stage s -> rank s;
  rank 1 { for i in 0..M/2 { F(mb = 2*i+1); F(mb = 2*i); } for i in 0..M { B(mb = i); } }
  rank 2 { for i in 0..M { F(mb = i); } for i in 0..M { B(mb = M-1-i); } }
  rank r { for i in 0..M { F(mb = i); } for i in 0..M { B(mb = i); } }
})";
  std::mt19937 random(11);
  for (bool zero : {false, true}) {
    Lowered l = lowerSource(source, 4, 8, {}, zero);
    const CommPlan &comm = *l.report.comm;
    // Rank 1 needs gradient 0 first, sent last: before B(mb 0) it receives all
    // eight and holds seven. Rank 2 holds gradients 0-6 of rank 3 while B7 runs
    // (and activation 1 of rank 1 while F0 runs). Rank 3 consumes in order.
    CHECK(comm.ranks[1].peakHeld == 7);
    CHECK(comm.ranks[2].peakHeld == 7);
    CHECK(comm.ranks[3].peakHeld == 0);
    // Rank 1's receives from rank 2 (gradients) come in rank 2's order: 7 first.
    std::vector<int32_t> gradients;
    for (const StreamCommand &c : l.programs[1].commands)
      if (c.cmd == StreamCmd::Receive && comm.messages[c.arg].kind == MessageKind::Gradient)
        gradients.push_back(comm.producerOp(*l.compiled->ir, comm.messages[c.arg]).microbatch);
    CHECK(gradients == std::vector<int32_t>{7, 6, 5, 4, 3, 2, 1, 0});
    checkStatic(l);
    checkLegendAndSteps(l);
    for (int trial = 0; trial < 10; ++trial)
      CHECK(StreamModel(l, random).run() == "");
  }
}
