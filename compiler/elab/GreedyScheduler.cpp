// List scheduling for `rank r greedy limit E { entries }` (see the header).
//
// Time is the file's cost units: F, B, I and W per stage from its `costs` (the
// cost model's defaults otherwise: F = 1, B = 2, W = 1, I = B - W, divided by
// the stages per rank), scaled by micro-batch size, plus `p2p` latency and
// activation bytes over `bandwidth` between ranks. Overlap pairs and sub-op
// costs are not modelled here (the simulator still times the result exactly).
// As in the simulator, a micro-batch's size scales a message's bytes, not its
// `p2p` latency.
// Readiness is the dependency order every check uses: F of stage s after F of
// s - 1, a backward (B or I) after its F and after the backward of s + 1, W
// after its I. A rank's live activations are its forwards whose B or W has not
// run (pending(B) + pending(W)); an F runs only while that stays within the
// limit. Ranks are visited in ascending order at equal times, so the result is
// deterministic. Work is bounded: a rank is re-examined only when an op on a
// neighbouring stage ends, and each entry examined counts against the loop
// iteration limit.
#include "elab/GreedyScheduler.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <queue>

namespace pipec {

using namespace ast;

namespace {

struct Event {
  double time;
  int32_t rank; // the rank whose op ended, or that a message reached
  int32_t stage;
  uint32_t flow;
  bool operator>(const Event &o) const {
    return time != o.time ? time > o.time : rank != o.rank ? rank > o.rank : stage > o.stage;
  }
};

class Greedy {
public:
  Greedy(const RankProgram &program, ScheduleIR &ir, Evaluator &eval, DiagnosticEngine &diags,
         ElabBudget &budget, RankInterpreter &interpreter, SlotTable &slots)
      : program_(program), ir_(ir), eval_(eval), diags_(diags), budget_(budget),
        interp_(interpreter), slots_(slots) {}

  bool run() {
    const size_t ranks = size_t(ir_.numRanks);
    readCosts();
    size_t cells = size_t(ir_.numStages) * size_t(ir_.numMicrobatches);
    endF_.assign(cells, -1);
    endBack_.assign(cells, -1);
    busyUntil_.assign(ranks, 0);
    live_.assign(ranks, 0);
    limit_.assign(ranks, -1);
    entries_.clear();
    for (const StmtPtr &s : program_.body)
      entries_.push_back(s.get());
    if (program_.limit)
      for (size_t r = 0; r < ranks; ++r) {
        interp_.enterRank(int64_t(r), program_, slots_[r]);
        bool ok = eval_.eval(*program_.limit, limit_[r]);
        interp_.leaveRank();
        if (!ok)
          return false;
      }
    std::vector<char> dirty(ranks, 1);
    std::vector<int32_t> queue;
    for (size_t r = 0; r < ranks; ++r)
      queue.push_back(int32_t(r));
    double time = 0;
    while (true) {
      std::sort(queue.begin(), queue.end());
      for (int32_t r : queue) {
        dirty[size_t(r)] = 0;
        if (busyUntil_[size_t(r)] > time)
          continue;
        if (!tryPick(r, time))
          return false;
      }
      queue.clear();
      if (events_.empty())
        break;
      time = events_.top().time;
      while (!events_.empty() && events_.top().time <= time) {
        Event e = events_.top();
        events_.pop();
        auto mark = [&](int32_t r) {
          if (r >= 0 && !dirty[size_t(r)]) {
            dirty[size_t(r)] = 1;
            queue.push_back(r);
          }
        };
        mark(e.rank);
        const Flow &flow = ir_.flows[e.flow];
        if (e.stage > 0)
          mark(flow.stageSlots[size_t(e.stage - 1)].rank);
        if (e.stage + 1 < ir_.numStages)
          mark(flow.stageSlots[size_t(e.stage + 1)].rank);
      }
    }
    return finished(time);
  }

private:
  // The last setting of `name` that applies to stage s, a per-stage one first.
  double cost(const char *name, int64_t s, double fallback) const {
    double general = fallback, specific = -1;
    bool hasSpecific = false;
    for (const CostSetting &c : ir_.costs) {
      if (c.name != name)
        continue;
      if (c.stage == s) {
        specific = c.value;
        hasSpecific = true;
      } else if (c.stage < 0) {
        general = c.value;
      }
    }
    return hasSpecific ? specific : general;
  }

  void readCosts() {
    size_t stages = size_t(ir_.numStages);
    double scale = double(ir_.numRanks) / double(ir_.numStages);
    duration_.assign(stages, {});
    latency_.assign(stages, 0);
    byteTime_.assign(stages, 0);
    for (size_t s = 0; s < stages; ++s) {
      double f = cost("F", int64_t(s), scale), b = cost("B", int64_t(s), 2 * scale),
             w = cost("W", int64_t(s), scale);
      duration_[s][size_t(OpKind::F)] = f;
      duration_[s][size_t(OpKind::B)] = b;
      duration_[s][size_t(OpKind::W)] = w;
      duration_[s][size_t(OpKind::I)] = cost("I", int64_t(s), std::max(0.0, b - w));
      duration_[s][size_t(OpKind::R)] = f;
      double bytes = cost("activation_bytes", int64_t(s), 0),
             bandwidth = cost("bandwidth", int64_t(s), 0);
      latency_[s] = cost("p2p", int64_t(s), 0);
      byteTime_[s] = bandwidth > 0 && bytes > 0 ? bytes / bandwidth : 0;
    }
  }

  size_t cell(int64_t stage, int64_t mb) const {
    return size_t(stage) * size_t(ir_.numMicrobatches) + size_t(mb);
  }

  uint32_t flowOf(int64_t mb) const {
    for (size_t f = 0; f < ir_.flows.size(); ++f)
      if (mb >= ir_.flows[f].begin && mb < ir_.flows[f].end)
        return uint32_t(f);
    return 0;
  }

  // How long micro-batch mb's message from stage `from` takes to the next rank.
  double transfer(int64_t from, int64_t mb) const {
    return latency_[size_t(from)] + byteTime_[size_t(from)] * double(ir_.sizeOf(mb));
  }

  // When `dep` (an op's end on stage `from`) reaches rank r: -1 if not run yet.
  double arrival(double end, int64_t from, int64_t mb, uint32_t flow, int32_t r) const {
    if (end < 0)
      return -1;
    return ir_.flows[flow].stageSlots[size_t(from)].rank == r ? end : end + transfer(from, mb);
  }

  // The time the op can start, or -1 while a dependency has not run.
  double readyAt(OpKind kind, const RankInterpreter::NextOp &op, int32_t r) const {
    uint32_t flow = flowOf(op.microbatch);
    int64_t s = op.stage, mb = op.microbatch;
    double at = 0;
    auto need = [&](double t) {
      if (t < 0 || at < 0)
        at = -1;
      else
        at = std::max(at, t);
    };
    if (kind == OpKind::F) {
      if (s > 0)
        need(arrival(endF_[cell(s - 1, mb)], s - 1, mb, flow, r));
    } else if (kind == OpKind::W) {
      need(endBack_[cell(s, mb)]);
    } else {
      need(endF_[cell(s, mb)]);
      if (s + 1 < ir_.numStages)
        need(arrival(endBack_[cell(s + 1, mb)], s + 1, mb, flow, r));
    }
    return at;
  }

  // Runs rank r's first entry that can run at `time`, if any.
  bool tryPick(int32_t r, double time) {
    interp_.enterRank(r, program_, slots_[size_t(r)]);
    bool ok = pick(r, time);
    interp_.leaveRank();
    return ok;
  }

  bool pick(int32_t r, double time) {
    for (const Stmt *entry : entries_) {
      if (!budget_.spend(1, diags_, program_.greedyRange, "greedy scheduling", "entries"))
        return false;
      const OpStmt *stmt = nullptr;
      if (entry->kind == StmtKind::If) {
        const auto &branch = static_cast<const IfStmt &>(*entry);
        int64_t holds;
        if (!eval_.eval(*branch.cond, holds))
          return false;
        if (!holds)
          continue;
        stmt = static_cast<const OpStmt *>(branch.then.front().get());
      } else {
        stmt = static_cast<const OpStmt *>(entry);
      }
      const OpCall &call = stmt->ops.front();
      RankInterpreter::NextOp next;
      if (!interp_.peek(call, next))
        return false;
      if (!next.exists)
        continue;
      double ready = readyAt(call.kind, next, r);
      if (ready < 0 || ready > time)
        continue;
      if (call.kind == OpKind::F && program_.limit && live_[size_t(r)] + 1 > limit_[size_t(r)])
        continue;
      if (!interp_.emit(*stmt))
        return false;
      const Op &op = ir_.ranks[size_t(r)].ops.back();
      double end = time + duration_[size_t(op.stage)][size_t(op.kind)] * double(ir_.sizeOf(op.microbatch));
      busyUntil_[size_t(r)] = end;
      size_t c = cell(op.stage, op.microbatch);
      if (op.kind == OpKind::F) {
        endF_[c] = end;
        ++live_[size_t(r)];
      } else if (op.kind == OpKind::W) {
        --live_[size_t(r)];
      } else {
        endBack_[c] = end;
        live_[size_t(r)] -= op.kind == OpKind::B;
      }
      events_.push({end, r, op.stage, op.flow});
      double sent = transfer(op.stage, op.microbatch);
      if (sent > 0)
        events_.push({end + sent, r, op.stage, op.flow});
      return true;
    }
    return true;
  }

  // Every op has run, or no rank can run one: a deadlock of the rule.
  bool finished(double time) {
    std::string stuck;
    int count = 0;
    for (size_t r = 0; r < slots_.size(); ++r) {
      int64_t owed = 0;
      for (const SlotState &slot : slots_[r].all())
        owed += 2 * int64_t(slot.count) - slot.forwardsRun - slot.backwardsRun +
                int64_t(slot.deferred.size());
      if (owed == 0)
        continue;
      if (count < 4)
        stuck += std::string(count ? "; " : "") + "rank " + std::to_string(r) + " owes " +
                 std::to_string(owed) + " ops with " + std::to_string(live_[r]) +
                 " live activations" +
                 (program_.limit ? " (limit " + std::to_string(limit_[r]) + ")" : "");
      ++count;
    }
    if (count == 0)
      return true;
    char at[32];
    snprintf(at, sizeof at, "%g", time);
    diags_.report(DiagKind::GreedyDeadlock, program_.greedyRange,
                  "greedy scheduling stops at time " + std::string(at) + ": no rank can run " +
                      "any entry, and " + std::to_string(count) +
                      (count == 1 ? " rank owes ops" : " ranks owe ops"))
        .note(stuck + (count > 4 ? "; ..." : ""))
        .note("an entry runs when its op's dependencies have run, its 'if' holds and, for F, "
              "the rank stays within the limit; add an entry that can run, or raise the limit");
    return false;
  }

  const RankProgram &program_;
  ScheduleIR &ir_;
  Evaluator &eval_;
  DiagnosticEngine &diags_;
  ElabBudget &budget_;
  RankInterpreter &interp_;
  SlotTable &slots_;
  std::vector<const Stmt *> entries_;
  std::vector<std::array<double, 5>> duration_; // [stage][OpKind]
  std::vector<double> latency_, byteTime_;       // [stage]: a unit message to the next rank
  std::vector<double> endF_, endBack_;           // [stage * M + mb]; -1: not run
  std::vector<double> busyUntil_;
  std::vector<int64_t> live_, limit_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
};

} // namespace

bool runGreedy(const RankProgram &program, ScheduleIR &ir, Evaluator &eval,
               DiagnosticEngine &diags, ElabBudget &budget, RankInterpreter &interpreter,
               SlotTable &slots) {
  return Greedy(program, ir, eval, diags, budget, interpreter, slots).run();
}

} // namespace pipec
