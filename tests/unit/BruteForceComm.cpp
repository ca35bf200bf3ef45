#include "BruteForceComm.h"

#include <algorithm>
#include <cstdint>
#include <map>
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
void sendsOf(const ScheduleIR &ir, int32_t rank, const Op &op, std::vector<BfCommOp> &out) {
  if (op.kind == OpKind::F && op.stage + 1 < ir.numStages) {
    int32_t to = rankOfStage(ir, op, op.stage + 1);
    if (to != rank)
      out.push_back({true, to, {false, op.stage, op.microbatch}});
  } else if (isBackward(op) && op.stage > 0) {
    int32_t to = rankOfStage(ir, op, op.stage - 1);
    if (to != rank)
      out.push_back({true, to, {true, op.stage, op.microbatch}});
  }
}

// What `op` on `rank` must receive before it runs (at most one message).
void receivesOf(const ScheduleIR &ir, int32_t rank, const Op &op, std::vector<BfCommOp> &out) {
  if (op.kind == OpKind::F && op.stage > 0) {
    int32_t from = rankOfStage(ir, op, op.stage - 1);
    if (from != rank)
      out.push_back({false, from, {false, op.stage - 1, op.microbatch}});
  } else if (isBackward(op) && op.stage + 1 < ir.numStages) {
    int32_t from = rankOfStage(ir, op, op.stage + 1);
    if (from != rank)
      out.push_back({false, from, {true, op.stage + 1, op.microbatch}});
  }
}

} // namespace

BfPlan bruteForcePlan(const ScheduleIR &ir) {
  BfPlan plan;
  plan.ranks.resize(ir.ranks.size());
  for (size_t r = 0; r < ir.ranks.size(); ++r) {
    const std::vector<Op> &ops = ir.ranks[r].ops;
    int32_t rank = static_cast<int32_t>(r);
    // Steps: one op, or an overlap pair (First immediately followed by Second).
    std::vector<std::vector<const Op *>> steps;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].pair == PairRole::First && i + 1 < ops.size() &&
          ops[i + 1].pair == PairRole::Second) {
        steps.push_back({&ops[i], &ops[i + 1]});
        ++i;
      } else {
        steps.push_back({&ops[i]});
      }
    }
    std::vector<std::vector<BfCommOp>> &groups = plan.ranks[r].groups;
    groups.assign(steps.size() + 1, {});
    for (size_t k = 0; k <= steps.size(); ++k) {
      if (k > 0)
        for (const Op *op : steps[k - 1])
          sendsOf(ir, rank, *op, groups[k]);
      if (k < steps.size())
        for (const Op *op : steps[k])
          receivesOf(ir, rank, *op, groups[k]);
    }
  }
  return plan;
}

BfVerdict bruteForceCheck(const BfPlan &plan) {
  BfVerdict verdict;
  const size_t numRanks = plan.ranks.size();

  // Where every comm op sits: (rank, group, index in group).
  struct Pos {
    size_t rank = 0, group = 0, index = 0;
  };
  const Pos none{SIZE_MAX, SIZE_MAX, SIZE_MAX};
  // sends[(a,b)] in a's posting order; recvs[(a,b)]: receives on b from a, in b's order.
  std::map<std::pair<size_t, size_t>, std::vector<Pos>> sends, recvs;
  for (size_t r = 0; r < numRanks; ++r)
    for (size_t g = 0; g < plan.ranks[r].groups.size(); ++g)
      for (size_t i = 0; i < plan.ranks[r].groups[g].size(); ++i) {
        const BfCommOp &op = plan.ranks[r].groups[g][i];
        size_t peer = static_cast<size_t>(op.peer);
        if (op.isSend)
          sends[{r, peer}].push_back({r, g, i});
        else
          recvs[{peer, r}].push_back({r, g, i});
      }
  auto opAt = [&](const Pos &p) -> const BfCommOp & {
    return plan.ranks[p.rank].groups[p.group][p.index];
  };

  // Matching and mismatch.
  std::vector<std::vector<std::vector<Pos>>> match(numRanks);
  for (size_t r = 0; r < numRanks; ++r) {
    match[r].resize(plan.ranks[r].groups.size());
    for (size_t g = 0; g < plan.ranks[r].groups.size(); ++g)
      match[r][g].assign(plan.ranks[r].groups[g].size(), none);
  }
  auto noteMismatch = [&](const std::string &text) {
    if (!verdict.mismatch)
      verdict.mismatchDetail = text;
    verdict.mismatch = true;
  };
  std::map<std::pair<size_t, size_t>, int> pairs;
  for (auto &kv : sends)
    pairs[kv.first] = 1;
  for (auto &kv : recvs)
    pairs[kv.first] = 1;
  for (auto &kv : pairs) {
    size_t a = kv.first.first, b = kv.first.second;
    const std::vector<Pos> &s = sends[kv.first];
    const std::vector<Pos> &v = recvs[kv.first];
    size_t common = std::min(s.size(), v.size());
    for (size_t i = 0; i < common; ++i) {
      match[s[i].rank][s[i].group][s[i].index] = v[i];
      match[v[i].rank][v[i].group][v[i].index] = s[i];
      if (opAt(s[i]).message != opAt(v[i]).message)
        noteMismatch("send #" + std::to_string(i) + " from rank " + std::to_string(a) + " to rank " +
                     std::to_string(b) + " is the " + opAt(s[i]).message.str() +
                     ", but the matching receive expects the " + opAt(v[i]).message.str());
    }
    if (s.size() != v.size())
      noteMismatch("rank " + std::to_string(a) + " sends " + std::to_string(s.size()) +
                   " messages to rank " + std::to_string(b) + ", which receives " +
                   std::to_string(v.size()));
  }

  // Deadlock: naive fixpoint. cur[r] = the group rank r is posted up to and waiting in.
  std::vector<size_t> cur(numRanks, 0);
  std::vector<std::vector<std::vector<char>>> done(numRanks);
  for (size_t r = 0; r < numRanks; ++r) {
    done[r].resize(plan.ranks[r].groups.size());
    for (size_t g = 0; g < plan.ranks[r].groups.size(); ++g)
      done[r][g].assign(plan.ranks[r].groups[g].size(), 0);
  }
  bool progress = true;
  while (progress) {
    progress = false;
    // Complete every op whose match is in the peer's current (posted) group.
    for (size_t r = 0; r < numRanks; ++r) {
      size_t g = cur[r];
      if (g >= plan.ranks[r].groups.size())
        continue;
      for (size_t i = 0; i < plan.ranks[r].groups[g].size(); ++i) {
        if (done[r][g][i])
          continue;
        const Pos &m = match[r][g][i];
        if (m.rank == SIZE_MAX)
          continue; // unmatched: never completes
        if (cur[m.rank] == m.group) {
          done[r][g][i] = 1;
          done[m.rank][m.group][m.index] = 1;
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
      for (char c : done[r][g])
        all = all && c;
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
    verdict.deadlockDetail += "rank " + std::to_string(r) + " stuck in group " +
                              std::to_string(cur[r]) + " of " +
                              std::to_string(plan.ranks[r].groups.size()) + ":";
    for (size_t i = 0; i < plan.ranks[r].groups[cur[r]].size(); ++i) {
      const BfCommOp &op = plan.ranks[r].groups[cur[r]][i];
      verdict.deadlockDetail += std::string(" ") + (done[r][cur[r]][i] ? "[done]" : "[wait]") +
                                (op.isSend ? "send to " : "recv from ") + std::to_string(op.peer) +
                                " (" + op.message.str() + ")";
    }
    verdict.deadlockDetail += "\n";
  }
  return verdict;
}

} // namespace pipec::test
