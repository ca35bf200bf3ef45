#include "BruteForceComm.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>

namespace pipec::test {

std::string BfMessage::str() const {
  return std::string(gradient ? "gradient" : "activation") + " of stage " + std::to_string(stage) +
         ", mb " + std::to_string(microbatch);
}

namespace {

int32_t rankOfStage(const ScheduleIR &ir, const Op &op, int64_t stage) {
  return ir.flows[op.flow].stageSlots[static_cast<size_t>(stage)].rank;
}

bool isBackward(const Op &op) { return op.kind == OpKind::B || op.kind == OpKind::I; }

// What `op` on `rank` sends after it runs (at most one message).
void sendsOf(const ScheduleIR &ir, int32_t rank, const Op &op, BfCommOp base,
             std::vector<BfCommOp> &out) {
  base.isSend = true;
  if (op.kind == OpKind::F && op.stage + 1 < ir.numStages) {
    base.peer = rankOfStage(ir, op, op.stage + 1);
    base.message = {false, op.stage, op.microbatch};
  } else if (isBackward(op) && op.stage > 0) {
    base.peer = rankOfStage(ir, op, op.stage - 1);
    base.message = {true, op.stage, op.microbatch};
  } else {
    return;
  }
  if (base.peer != rank)
    out.push_back(base);
}

// What `op` on `rank` must receive before it runs (at most one message).
void receivesOf(const ScheduleIR &ir, int32_t rank, const Op &op, BfCommOp base,
                std::vector<BfCommOp> &out) {
  base.isSend = false;
  if (op.kind == OpKind::F && op.stage > 0) {
    base.peer = rankOfStage(ir, op, op.stage - 1);
    base.message = {false, op.stage - 1, op.microbatch};
  } else if (isBackward(op) && op.stage + 1 < ir.numStages) {
    base.peer = rankOfStage(ir, op, op.stage + 1);
    base.message = {true, op.stage + 1, op.microbatch};
  } else {
    return;
  }
  if (base.peer != rank)
    out.push_back(base);
}

// Channels model: every rank's posted receives, straight from the definition
// (linear searches everywhere; only small schedules come here).
void postInSenderOrder(BfPlan &plan) {
  for (size_t r = 0; r < plan.ranks.size(); ++r) {
    BfRank &me = plan.ranks[r];
    const size_t steps = me.stepOp.size();
    me.posted.assign(steps, {});
    std::map<std::pair<int32_t, bool>, size_t> postedOn; // (peer, gradient) -> count
    auto sentSequence = [&](int32_t peer, bool gradient) {
      std::vector<BfMessage> sequence;
      for (const auto &step : plan.ranks[peer].sends)
        for (const BfCommOp &send : step)
          if (send.peer == static_cast<int32_t>(r) && send.message.gradient == gradient)
            sequence.push_back(send.message);
      return sequence;
    };
    auto consumerOf = [&](const BfMessage &message) {
      for (const auto &step : me.receives)
        for (const BfCommOp &receive : step)
          if (receive.message == message)
            return receive;
      return BfCommOp{}; // not consumed here: shows up as a mismatch later
    };
    for (size_t k = 0; k < steps; ++k)
      for (const BfCommOp &need : me.receives[k]) {
        std::vector<BfMessage> sequence = sentSequence(need.peer, need.message.gradient);
        size_t place = std::find(sequence.begin(), sequence.end(), need.message) - sequence.begin();
        size_t &count = postedOn[{need.peer, need.message.gradient}];
        for (; count <= place && count < sequence.size(); ++count) {
          BfCommOp receive = consumerOf(sequence[count]);
          receive.isSend = false;
          receive.peer = need.peer;
          receive.message = sequence[count];
          me.posted[k].push_back(receive);
        }
      }
    for (size_t k = 0; k < steps; ++k) {
      size_t held = 0;
      for (size_t j = 0; j <= k; ++j)
        for (const BfCommOp &receive : me.posted[j])
          held += receive.step > k;
      me.peakHeld = std::max(me.peakHeld, held);
    }
  }
}

} // namespace

BfPlan bruteForcePlan(const ScheduleIR &ir) {
  BfPlan plan;
  plan.ranks.resize(ir.ranks.size());
  for (size_t r = 0; r < ir.ranks.size(); ++r) {
    const std::vector<Op> &ops = ir.ranks[r].ops;
    int32_t rank = static_cast<int32_t>(r);
    BfRank &out = plan.ranks[r];
    // Steps: one op, or an overlap pair (First immediately followed by Second).
    for (size_t i = 0; i < ops.size(); ++i) {
      out.stepOp.push_back(static_cast<uint32_t>(i));
      if (ops[i].pair == PairRole::First && i + 1 < ops.size() &&
          ops[i + 1].pair == PairRole::Second)
        ++i;
    }
    const size_t steps = out.stepOp.size();
    out.sends.resize(steps);
    out.receives.resize(steps);
    for (size_t k = 0; k < steps; ++k) {
      size_t end = k + 1 < steps ? out.stepOp[k + 1] : ops.size();
      for (size_t i = out.stepOp[k]; i < end; ++i) {
        BfCommOp base;
        base.op = static_cast<uint32_t>(i);
        base.step = static_cast<uint32_t>(k);
        sendsOf(ir, rank, ops[i], base, out.sends[k]);
        receivesOf(ir, rank, ops[i], base, out.receives[k]);
      }
    }
    out.groups.assign(steps + 1, {});
    for (size_t k = 0; k <= steps; ++k) {
      if (k > 0)
        out.groups[k] = out.sends[k - 1];
      if (k < steps)
        out.groups[k].insert(out.groups[k].end(), out.receives[k].begin(), out.receives[k].end());
    }
  }
  postInSenderOrder(plan);
  return plan;
}

namespace {

std::string rankStr(size_t r) { return "rank " + std::to_string(r); }

// Compares, per key, the sequence of sends with the sequence of receives.
// Key: (sender, receiver, kind) for Channels, (sender, receiver) for Groups.
template <typename Pos, typename SendAt, typename RecvAt>
void compareSequences(const std::map<std::tuple<size_t, size_t, int>, std::vector<Pos>> &sends,
                      const std::map<std::tuple<size_t, size_t, int>, std::vector<Pos>> &recvs,
                      SendAt sendAt, RecvAt recvAt, BfVerdict &verdict) {
  std::map<std::tuple<size_t, size_t, int>, int> keys;
  for (auto &kv : sends)
    keys[kv.first] = 1;
  for (auto &kv : recvs)
    keys[kv.first] = 1;
  static const std::vector<Pos> empty;
  for (auto &kv : keys) {
    auto s = sends.find(kv.first), v = recvs.find(kv.first);
    const std::vector<Pos> &sv = s == sends.end() ? empty : s->second;
    const std::vector<Pos> &rv = v == recvs.end() ? empty : v->second;
    size_t a = std::get<0>(kv.first), b = std::get<1>(kv.first);
    for (size_t i = 0; i < std::min(sv.size(), rv.size()); ++i)
      if (sendAt(sv[i]).message != recvAt(rv[i]).message && !verdict.mismatch) {
        verdict.mismatch = true;
        verdict.mismatchDetail = "send #" + std::to_string(i) + " from " + rankStr(a) + " to " +
                                 rankStr(b) + " is the " + sendAt(sv[i]).message.str() +
                                 ", but the matching receive expects the " +
                                 recvAt(rv[i]).message.str();
      }
    if (sv.size() != rv.size() && !verdict.mismatch) {
      verdict.mismatch = true;
      verdict.mismatchDetail = rankStr(a) + " sends " + std::to_string(sv.size()) +
                               " messages to " + rankStr(b) + ", which receives " +
                               std::to_string(rv.size());
    }
  }
}

BfVerdict checkChannels(const BfPlan &plan) {
  BfVerdict verdict;
  const size_t numRanks = plan.ranks.size();
  // A channel: (sender, receiver, 1 for gradients). Its sends and receives, each as
  // (rank, step, index within the step's list), in step order.
  using Pos = std::tuple<size_t, size_t, size_t>;
  using Key = std::tuple<size_t, size_t, int>;
  std::map<Key, std::vector<Pos>> sends, recvs;
  for (size_t r = 0; r < numRanks; ++r)
    for (size_t k = 0; k < plan.ranks[r].stepOp.size(); ++k) {
      for (size_t i = 0; i < plan.ranks[r].sends[k].size(); ++i) {
        const BfCommOp &op = plan.ranks[r].sends[k][i];
        sends[{r, static_cast<size_t>(op.peer), op.message.gradient}].push_back({r, k, i});
      }
      // Receives in posting order: Pos's step is the step they are posted before.
      for (size_t i = 0; i < plan.ranks[r].posted[k].size(); ++i) {
        const BfCommOp &op = plan.ranks[r].posted[k][i];
        recvs[{static_cast<size_t>(op.peer), r, op.message.gradient}].push_back({r, k, i});
      }
    }
  auto sendAt = [&](const Pos &p) -> const BfCommOp & {
    return plan.ranks[std::get<0>(p)].sends[std::get<1>(p)][std::get<2>(p)];
  };
  auto recvAt = [&](const Pos &p) -> const BfCommOp & {
    return plan.ranks[std::get<0>(p)].posted[std::get<1>(p)][std::get<2>(p)];
  };
  compareSequences(sends, recvs, sendAt, recvAt, verdict);

  // Deadlock: naive fixpoint. ran[r] = how many of rank r's steps ran (a prefix);
  // completed[c] = how many of channel c's messages completed (a prefix).
  std::vector<size_t> ran(numRanks, 0);
  std::map<Key, size_t> completed;
  for (auto &kv : sends)
    completed[kv.first] = 0;
  for (auto &kv : recvs)
    completed[kv.first] = 0;
  // For each message a step consumes: its channel and its index on it.
  std::map<std::pair<size_t, BfMessage>, std::pair<Key, size_t>> slotOf;
  for (auto &kv : recvs)
    for (size_t i = 0; i < kv.second.size(); ++i)
      slotOf[{std::get<0>(kv.second[i]), recvAt(kv.second[i]).message}] = {kv.first, i};
  auto recvSlot = [&](size_t r, const BfCommOp &op) {
    auto it = slotOf.find({r, op.message});
    return it == slotOf.end() ? std::pair<Key, size_t>{Key{}, ~size_t(0)} : it->second;
  };

  bool progress = true;
  while (progress) {
    progress = false;
    // Message i of a channel completes when send i's step ran, receive i is
    // posted (its rank reached the step it is posted before), and message i-1
    // completed.
    for (auto &kv : completed) {
      const Key &c = kv.first;
      size_t &done = kv.second;
      auto s = sends.find(c), v = recvs.find(c);
      size_t sendCount = s == sends.end() ? 0 : s->second.size();
      size_t recvCount = v == recvs.end() ? 0 : v->second.size();
      while (done < sendCount && done < recvCount) {
        const Pos &send = s->second[done], &receive = v->second[done];
        if (ran[std::get<0>(send)] <= std::get<1>(send))
          break; // its producing step has not run
        if (ran[std::get<0>(receive)] < std::get<1>(receive))
          break; // its receive is not posted yet
        ++done;
        progress = true;
      }
    }
    // A step runs when the previous one ran and all its receives completed.
    for (size_t r = 0; r < numRanks; ++r) {
      while (ran[r] < plan.ranks[r].stepOp.size()) {
        size_t k = ran[r];
        bool ready = true;
        for (size_t i = 0; i < plan.ranks[r].receives[k].size() && ready; ++i) {
          auto slot = recvSlot(r, plan.ranks[r].receives[k][i]);
          ready = slot.second != ~size_t(0) && completed[slot.first] > slot.second;
        }
        if (!ready)
          break;
        ++ran[r];
        progress = true;
      }
    }
  }

  verdict.stuckAt = ran;
  for (size_t r = 0; r < numRanks; ++r) {
    size_t k = ran[r];
    if (k >= plan.ranks[r].stepOp.size())
      continue;
    verdict.deadlock = true;
    verdict.deadlockDetail += rankStr(r) + " never runs step " + std::to_string(k) + " (op " +
                              std::to_string(plan.ranks[r].stepOp[k]) + "), waiting for:";
    for (size_t i = 0; i < plan.ranks[r].receives[k].size(); ++i) {
      const BfCommOp &op = plan.ranks[r].receives[k][i];
      auto slot = recvSlot(r, op);
      if (slot.second == ~size_t(0) || completed[slot.first] <= slot.second)
        verdict.deadlockDetail += " the " + op.message.str() + " from " + rankStr(op.peer) +
                                  " (message #" + std::to_string(slot.second) + " on its channel)";
    }
    verdict.deadlockDetail += "\n";
  }
  for (auto &kv : completed) {
    auto s = sends.find(kv.first);
    if (s != sends.end() && kv.second < s->second.size() && !verdict.deadlock) {
      verdict.deadlock = true;
      verdict.deadlockDetail += "a send from " + rankStr(std::get<0>(kv.first)) + " to " +
                                rankStr(std::get<1>(kv.first)) + " never completes\n";
    }
  }
  return verdict;
}

BfVerdict checkGroups(const BfPlan &plan) {
  BfVerdict verdict;
  const size_t numRanks = plan.ranks.size();
  using Pos = std::tuple<size_t, size_t, size_t>; // (rank, group, index in group)
  using Key = std::tuple<size_t, size_t, int>;    // (sender, receiver, 0)
  std::map<Key, std::vector<Pos>> sends, recvs;
  for (size_t r = 0; r < numRanks; ++r)
    for (size_t g = 0; g < plan.ranks[r].groups.size(); ++g)
      for (size_t i = 0; i < plan.ranks[r].groups[g].size(); ++i) {
        const BfCommOp &op = plan.ranks[r].groups[g][i];
        size_t peer = static_cast<size_t>(op.peer);
        if (op.isSend)
          sends[{r, peer, 0}].push_back({r, g, i});
        else
          recvs[{peer, r, 0}].push_back({r, g, i});
      }
  auto opAt = [&](const Pos &p) -> const BfCommOp & {
    return plan.ranks[std::get<0>(p)].groups[std::get<1>(p)][std::get<2>(p)];
  };
  compareSequences(sends, recvs, opAt, opAt, verdict);

  // Positional matching.
  std::map<Pos, Pos> match;
  for (auto &kv : sends) {
    auto v = recvs.find(kv.first);
    if (v == recvs.end())
      continue;
    for (size_t i = 0; i < std::min(kv.second.size(), v->second.size()); ++i) {
      match[kv.second[i]] = v->second[i];
      match[v->second[i]] = kv.second[i];
    }
  }

  // Deadlock: naive fixpoint. cur[r] = the group rank r has posted and waits in.
  std::vector<size_t> cur(numRanks, 0);
  std::map<Pos, bool> done;
  bool progress = true;
  while (progress) {
    progress = false;
    // Complete every op whose match is in the peer's current (posted) group.
    for (size_t r = 0; r < numRanks; ++r) {
      size_t g = cur[r];
      if (g >= plan.ranks[r].groups.size())
        continue;
      for (size_t i = 0; i < plan.ranks[r].groups[g].size(); ++i) {
        Pos p{r, g, i};
        if (done[p])
          continue;
        auto m = match.find(p);
        if (m == match.end())
          continue; // unmatched: never completes
        if (cur[std::get<0>(m->second)] == std::get<1>(m->second)) {
          done[p] = true;
          done[m->second] = true;
          progress = true;
        }
      }
    }
    // Advance every rank whose current group is complete.
    for (size_t r = 0; r < numRanks; ++r) {
      size_t g = cur[r];
      if (g >= plan.ranks[r].groups.size())
        continue;
      bool all = true;
      for (size_t i = 0; i < plan.ranks[r].groups[g].size(); ++i)
        all = all && done[Pos{r, g, i}];
      if (all) {
        ++cur[r];
        progress = true;
      }
    }
  }
  verdict.stuckAt = cur;
  for (size_t r = 0; r < numRanks; ++r) {
    if (cur[r] >= plan.ranks[r].groups.size())
      continue;
    verdict.deadlock = true;
    verdict.deadlockDetail += rankStr(r) + " stuck in group " + std::to_string(cur[r]) + " of " +
                              std::to_string(plan.ranks[r].groups.size()) + ":";
    for (size_t i = 0; i < plan.ranks[r].groups[cur[r]].size(); ++i) {
      const BfCommOp &op = plan.ranks[r].groups[cur[r]][i];
      verdict.deadlockDetail += std::string(" ") + (done[Pos{r, cur[r], i}] ? "[done]" : "[wait]") +
                                (op.isSend ? "send to " : "recv from ") + std::to_string(op.peer) +
                                " (" + op.message.str() + ")";
    }
    verdict.deadlockDetail += "\n";
  }
  return verdict;
}

} // namespace

BfVerdict bruteForceCheck(const BfPlan &plan, BfModel model) {
  return model == BfModel::Channels ? checkChannels(plan) : checkGroups(plan);
}

} // namespace pipec::test
