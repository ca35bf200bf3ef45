#include "elab/RankInterpreter.h"

namespace pipec {

using namespace ast;

static std::string slotText(int64_t rank, int64_t chunk) {
  return "chunk " + std::to_string(chunk) + " of rank " + std::to_string(rank);
}

bool RankInterpreter::run(int64_t rank, const RankProgram &program, RankSlots &slots) {
  rank_ = rank;
  slots_ = &slots;
  loops_.clear();
  expansions_.clear();
  deferredSequence_ = 0;
  ir_.ranks[rank].program = &program;
  if (program.generic)
    eval_.env()[program.var.id] = rank;
  eval_.setContext([this](Diagnostic &d) { addContext(d); });
  eval_.setPendingState(this);
  bool ok = block(program.body);
  eval_.setPendingState(nullptr);
  eval_.setContext(nullptr);
  return ok;
}

void RankInterpreter::enterRank(int64_t rank, const RankProgram &program, RankSlots &slots) {
  rank_ = rank;
  slots_ = &slots;
  ir_.ranks[rank].program = &program;
  eval_.env()[program.var.id] = rank;
  eval_.setContext([this](Diagnostic &d) { addContext(d); });
  eval_.setPendingState(this);
}

void RankInterpreter::leaveRank() {
  eval_.setPendingState(nullptr);
  eval_.setContext(nullptr);
}

// The op `call` would resolve to now, by the same cursors and queues resolve()
// uses, so the op greedy scheduling checks is the op it then appends.
bool RankInterpreter::peek(const OpCall &call, NextOp &out) {
  out = NextOp{};
  int64_t chunk = 0;
  if (call.chunk && !eval_.eval(*call.chunk, chunk))
    return false;
  if (call.kind == OpKind::W) {
    const SlotState *only = nullptr;
    if (call.chunk && !(only = slotFor(call, chunk)))
      return false;
    const DeferredI *best = nullptr;
    const SlotState *bestSlot = nullptr;
    for (SlotState &slot : slots_->all()) {
      if ((only && &slot != only) || slot.deferred.size() == 0)
        continue;
      const DeferredI &front = *slot.deferred.begin();
      if (!best || front.sequence < best->sequence) {
        best = &front;
        bestSlot = &slot;
      }
    }
    if (best)
      out = NextOp{true, bestSlot->chunk, best->stage, best->microbatch};
    return true;
  }
  SlotState *slot = slotFor(call, chunk);
  if (!slot)
    return false;
  const MicrobatchCursor &cursor = call.kind == OpKind::F ? slot->forward : slot->backward;
  std::optional<size_t> next = cursor.peekNext(slot->count);
  if (!next)
    return true;
  int64_t mb = 0;
  const SlotUse &use = slot->useAt(*next, mb);
  out = NextOp{true, static_cast<int32_t>(chunk), use.stage, static_cast<int32_t>(mb)};
  return true;
}

// What the rank still owes, from the same bookkeeping that resolves its ops, so a
// program that reads it elaborates the same way every time.
bool RankInterpreter::pending(const Pending &e, bool hasChunk, int64_t chunk, int64_t &out) {
  auto count = [&](const SlotState &slot) -> int64_t {
    switch (e.op) {
    case OpKind::F: return std::max<int64_t>(0, int64_t(slot.count) - slot.forwardsRun);
    case OpKind::B: return std::max<int64_t>(0, slot.forwardsRun - slot.backwardsRun);
    default: return int64_t(slot.deferred.size());
    }
  };
  out = 0;
  if (hasChunk) {
    const SlotState *slot = slots_->find(chunk);
    if (!slot) {
      error(DiagKind::EmptyChunk, e.chunk->range, slotText(rank_, chunk) + " holds no stage");
      return false;
    }
    out = count(*slot);
    return true;
  }
  for (const SlotState &slot : slots_->all())
    out += count(slot);
  return true;
}

void RankInterpreter::addContext(Diagnostic &d) {
  std::string where = "on rank " + std::to_string(rank_);
  if (!loops_.empty()) {
    where += ", iteration ";
    for (size_t i = 0; i < loops_.size(); ++i)
      where += (i ? ", " : "") + loops_[i].loop->var.name + " = " + std::to_string(loops_[i].value);
  }
  d.note(ir_.ranks[rank_].program->headRange, where);
  // An op or expression inside a definition: where it was called from, innermost first.
  for (auto it = expansions_.rbegin(); it != expansions_.rend(); ++it)
    d.note((*it)->range, "in the expansion of '" + (*it)->def + "' called here");
}

Diagnostic *RankInterpreter::error(DiagKind kind, llvm::SMRange at, std::string message) {
  Diagnostic *d = diags_.reportOnce(kind, at, std::move(message));
  if (d)
    addContext(*d);
  return d;
}

bool RankInterpreter::block(const Block &stmts) {
  for (const StmtPtr &s : stmts)
    if (!stmt(*s))
      return false;
  return true;
}

bool RankInterpreter::stmt(const Stmt &s) {
  switch (s.kind) {
  case StmtKind::Let: {
    const auto &let = static_cast<const LetStmt &>(s);
    return eval_.eval(*let.value, eval_.env()[let.var.id]);
  }
  case StmtKind::For:
    return loop(static_cast<const ForStmt &>(s));
  case StmtKind::If: {
    const auto &branch = static_cast<const IfStmt &>(s);
    int64_t cond;
    if (!eval_.eval(*branch.cond, cond))
      return false;
    return block(cond != 0 ? branch.then : branch.otherwise);
  }
  case StmtKind::Op:
    return opStatement(static_cast<const OpStmt &>(s));
  case StmtKind::Block: {
    const auto &expansion = static_cast<const BlockStmt &>(s);
    expansions_.push_back(&expansion);
    bool ok = block(expansion.body);
    expansions_.pop_back();
    return ok;
  }
  }
  return false;
}

bool ElabBudget::spend(uint64_t n, DiagnosticEngine &diags, llvm::SMRange at,
                       const std::string &who, const char *units) {
  iterations += n;
  if (iterations <= limits.maxIterations)
    return true;
  if (!exhausted)
    diags.report(DiagKind::IterationLimitExceeded, at,
                 who + " examined more than " + std::to_string(limits.maxIterations) + " " + units)
        .note("raise the limit with --max-iterations if this is intended");
  exhausted = true;
  return false;
}

bool RankInterpreter::loop(const ForStmt &s) {
  int64_t lo, hi;
  if (!eval_.eval(*s.lo, lo) || !eval_.eval(*s.hi, hi))
    return false;
  if (lo > hi) {
    if (Diagnostic *d = diags_.warnOnce(DiagKind::ReversedLoopRange, s.lo->range, lo, hi))
      addContext(*d);
    return true;
  }
  // Checked before running, so a huge range fails at once instead of spinning.
  uint64_t count = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  if (count > budget_.limits.maxIterations - budget_.iterations) {
    if (Diagnostic *d = error(DiagKind::IterationLimitExceeded, s.range,
                              "loops would run more than " +
                                  std::to_string(budget_.limits.maxIterations) +
                                  " iterations (this one alone runs " + std::to_string(count) + ")"))
      d->note("raise the limit with --max-iterations if this is intended");
    budget_.exhausted = true;
    return false;
  }
  budget_.iterations += count;
  int64_t &var = eval_.env()[s.var.id];
  loops_.push_back({&s, lo, 0});
  for (int64_t i = lo; i < hi; ++i) {
    var = i;
    loops_.back().value = i;
    loops_.back().frame = 0;
    if (!block(s.body))
      return false;
  }
  loops_.pop_back();
  return true;
}

// Iteration frames exist only for iterations that emitted an op.
uint32_t RankInterpreter::currentFrame(size_t depth) {
  if (depth == 0)
    return 0;
  LoopLevel &level = loops_[depth - 1];
  if (level.frame == 0) {
    uint32_t parent = currentFrame(depth - 1);
    level.frame = static_cast<uint32_t>(ir_.iterations.size());
    auto [loop, added] = budget_.loopIds.try_emplace(level.loop, ir_.loops.size());
    if (added)
      ir_.loops.push_back(level.loop);
    ir_.iterations.push_back({parent, loop->second, level.value});
  }
  return level.frame;
}

uint32_t RankInterpreter::originId(const OpCall &call) {
  auto [origin, added] = budget_.originIds.try_emplace(&call, ir_.origins.size());
  if (added)
    ir_.origins.push_back(&call);
  return origin->second;
}

bool RankInterpreter::opStatement(const OpStmt &s) {
  // The clock every 16K ops: a few nanoseconds an op at most.
  if (++budget_.opsSinceClock >= 16384) {
    budget_.opsSinceClock = 0;
    if (budget_.limits.deadline != std::chrono::steady_clock::time_point::max() &&
        std::chrono::steady_clock::now() > budget_.limits.deadline) {
      budget_.exhausted = true; // the caller that set the deadline reports it
      return false;
    }
  }
  if (budget_.ops + s.ops.size() > budget_.limits.maxOps) {
    if (Diagnostic *d = error(DiagKind::OpLimitExceeded, s.range,
                              "the schedule has more than " +
                                  std::to_string(budget_.limits.maxOps) + " ops"))
      d->note("raise the limit with --max-ops if this is intended");
    budget_.exhausted = true;
    return false;
  }
  Op ops[2];
  resolvedPeer_ = -1;
  for (size_t i = 0; i < s.ops.size(); ++i)
    if (!resolve(s.ops[i], ops[i]))
      return false;
  uint32_t frame = currentFrame(loops_.size());
  std::vector<Op> &out = ir_.ranks[rank_].ops;
  if (resolvedPeer_ >= 0) // a transfer op: never half of a pair (the parser refuses that)
    ir_.ranks[rank_].peers.push_back({static_cast<uint32_t>(out.size()), resolvedPeer_});
  if (s.ops.size() == 1) {
    ops[0].iteration = frame;
    out.push_back(ops[0]);
  } else {
    bool forwardFirst = ops[0].kind == OpKind::F;
    Op &forward = forwardFirst ? ops[0] : ops[1];
    Op &backward = forwardFirst ? ops[1] : ops[0];
    forward.pair = PairRole::First;
    forward.backwardWrittenFirst = !forwardFirst;
    backward.pair = PairRole::Second;
    forward.iteration = backward.iteration = frame;
    out.push_back(forward);
    out.push_back(backward);
  }
  budget_.ops += s.ops.size();
  return true;
}

SlotState *RankInterpreter::slotFor(const OpCall &call, int64_t chunk) {
  if (SlotState *slot = slots_->find(chunk))
    return slot;
  std::string held;
  size_t heldCount = slots_->all().size();
  for (size_t i = 0; i < heldCount && i < 8; ++i)
    held += (i ? ", " : "") + std::to_string(slots_->all()[i].chunk);
  if (heldCount > 8)
    held += ", ... (" + std::to_string(heldCount) + " chunks)";
  llvm::SMRange at = call.chunk ? call.chunk->range : call.range;
  if (Diagnostic *d = error(DiagKind::EmptyChunk, at,
                            slotText(rank_, chunk) + " holds no stage"))
    d->note(held.empty() ? "rank " + std::to_string(rank_) + " holds no stage at all"
                         : "rank " + std::to_string(rank_) + " holds chunk" +
                               (heldCount == 1 ? " " : "s ") + held);
  return nullptr;
}

bool RankInterpreter::resolve(const OpCall &call, Op &op) {
  op = Op{call.kind, PairRole::None, 0, 0, 0, 0, 0, 0, originId(call)};
  int64_t chunk = 0;
  if (call.chunk && !eval_.eval(*call.chunk, chunk))
    return false;
  if (call.kind == OpKind::W)
    return resolveW(call, op, call.chunk != nullptr, chunk);
  if (isMemoryOp(call.kind))
    return resolveMemoryOp(call, op, chunk);

  SlotState *slot = slotFor(call, chunk);
  if (!slot)
    return false;
  // R has a cursor of its own: a bare R replays the chunk's forwards in order,
  // however far ahead of the backwards it runs.
  MicrobatchCursor &cursor = call.kind == OpKind::F   ? slot->forward
                             : call.kind == OpKind::R ? slot->recompute
                                                      : slot->backward;
  size_t position;
  if (call.mb) {
    int64_t mb;
    if (!evalMicrobatch(call, mb))
      return false;
    int64_t found = slot->positionOf(mb);
    if (found < 0) {
      std::string flowName;
      for (const Flow &flow : ir_.flows)
        if (mb >= flow.begin && mb < flow.end)
          flowName = flow.name;
      error(DiagKind::MicrobatchNotOnChunk, call.mb->range,
            "micro-batch " + std::to_string(mb) + " (flow '" + flowName + "') does not pass through " +
                slotText(rank_, chunk));
      return false;
    }
    position = static_cast<size_t>(found);
    cursor.take(position, slot->count);
  } else {
    std::optional<size_t> next = cursor.takeNext(slot->count);
    if (!next) {
      const char *what = call.kind == OpKind::F   ? "forward"
                         : call.kind == OpKind::R ? "recompute"
                                                  : "backward";
      error(DiagKind::NoMicrobatchLeft, call.range,
            std::string("no micro-batch left to ") + what + " on " + slotText(rank_, chunk) +
                ": all " + std::to_string(slot->count) + " of its micro-batches already had one");
      return false;
    }
    position = *next;
  }
  int64_t mb = 0;
  const SlotUse &use = slot->useAt(position, mb);
  op.chunk = static_cast<int32_t>(chunk);
  op.stage = use.stage;
  op.flow = use.flow;
  op.microbatch = static_cast<int32_t>(mb);
  if (call.kind == OpKind::I)
    slot->deferred.push_back({op.microbatch, op.flow, op.stage, deferredSequence_++});
  if (call.kind != OpKind::R) // a recomputation is neither owed nor owing (pending())
    ++(call.kind == OpKind::F ? slot->forwardsRun : slot->backwardsRun);
  return true;
}

bool RankInterpreter::evalMicrobatch(const OpCall &call, int64_t &mb) {
  if (!eval_.eval(*call.mb, mb))
    return false;
  if (mb < 0 || mb >= ir_.numMicrobatches) {
    error(DiagKind::MicrobatchOutOfRange, call.mb->range,
          "micro-batch " + std::to_string(mb) + " does not exist; micro-batches are 0 to " +
              std::to_string(ir_.numMicrobatches - 1));
    return false;
  }
  return true;
}

// Memory ops name their micro-batch (the parser requires `mb =`) and take no
// cursor: they move an activation, they do not advance the rank's work.
// Offload, Reload, Evict and Load run on the rank that owns the activation, on
// its chunk `c`; Hold and Return run on the partner, and `c` is then the chunk of
// the owner (`from =` / `to =`) that made the activation.
bool RankInterpreter::resolveMemoryOp(const OpCall &call, Op &op, int64_t chunk) {
  int64_t mb = 0;
  if (!call.mb || !evalMicrobatch(call, mb))
    return false;
  int64_t owner = rank_;
  if (isTransferOp(call.kind)) {
    int64_t peer = 0;
    if (!call.peer || !eval_.eval(*call.peer, peer))
      return false;
    if (peer < 0 || peer >= ir_.numRanks) {
      error(DiagKind::TransferRankOutOfRange, call.peer->range,
            "partner rank " + std::to_string(peer) + " does not exist; ranks are 0 to " +
                std::to_string(ir_.numRanks - 1));
      return false;
    }
    if (peer == rank_) {
      if (Diagnostic *d = error(DiagKind::TransferToSelf, call.peer->range,
                                std::string(opKindName(call.kind)) + " on rank " +
                                    std::to_string(rank_) + " names its own rank as partner"))
        d->note("a transfer moves an activation to another rank's memory; Offload/Reload "
                "move it to this rank's host memory");
      return false;
    }
    resolvedPeer_ = static_cast<int32_t>(peer);
    if (isPartnerOp(call.kind))
      owner = peer;
  }
  const Flow *flow = nullptr;
  for (const Flow &f : ir_.flows)
    if (mb >= f.begin && mb < f.end)
      flow = &f;
  int64_t stage = -1;
  for (size_t s = 0; flow && s < flow->stageSlots.size(); ++s)
    if (flow->stageSlots[s].rank == owner && flow->stageSlots[s].chunk == chunk)
      stage = static_cast<int64_t>(s);
  if (stage < 0) {
    llvm::SMRange at = call.chunk ? call.chunk->range : call.range;
    error(DiagKind::MicrobatchNotOnChunk, at,
          "micro-batch " + std::to_string(mb) + " (flow '" + (flow ? flow->name : "") +
              "') does not pass through " + slotText(owner, chunk) +
              (owner != rank_ ? " (the owner this op names)" : ""));
    return false;
  }
  op.chunk = static_cast<int32_t>(chunk);
  op.stage = static_cast<int32_t>(stage);
  op.flow = static_cast<uint32_t>(flow - ir_.flows.data());
  op.microbatch = static_cast<int32_t>(mb);
  return true;
}

// W completes a deferred I: of chunk c if given (W(c)), else the oldest on the
// rank; with `mb =`, the deferred I of that micro-batch.
bool RankInterpreter::resolveW(const OpCall &call, Op &op, bool hasChunk, int64_t chunk) {
  int64_t wantedMb = -1;
  if (call.mb && !eval_.eval(*call.mb, wantedMb))
    return false;
  SlotState *only = nullptr;
  if (hasChunk && !(only = slotFor(call, chunk)))
    return false;

  SlotState *bestSlot = nullptr;
  DeferredQueue::iterator best;
  for (SlotState &slot : slots_->all()) {
    if (only && &slot != only)
      continue;
    for (auto it = slot.deferred.begin(); it != slot.deferred.end(); ++it) {
      if (wantedMb >= 0 && it->microbatch != wantedMb)
        continue;
      if (!bestSlot || it->sequence < best->sequence) {
        bestSlot = &slot;
        best = it;
      }
      break; // queues are in sequence order: the first match is this chunk's oldest
    }
  }
  if (!bestSlot) {
    std::string scope = hasChunk ? slotText(rank_, chunk) : "rank " + std::to_string(rank_);
    std::string which = wantedMb >= 0 ? " of micro-batch " + std::to_string(wantedMb) : "";
    if (Diagnostic *d = error(DiagKind::UnmatchedW, call.range,
                              "W has no deferred I" + which + " to complete on " + scope))
      d->note("every W completes an earlier I (the input-gradient half of a backward)");
    return false;
  }
  op.chunk = bestSlot->chunk;
  op.stage = best->stage;
  op.flow = best->flow;
  op.microbatch = best->microbatch;
  bestSlot->deferred.erase(best);
  return true;
}

} // namespace pipec
