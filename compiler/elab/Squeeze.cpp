// The squeeze pass (see the header). Work is linear in the ops plus the slots
// each move is tried at and the slots whose live count it changes; every
// slot visited counts against the loop iteration limit (--max-iterations).
//
// Memory model, per rank and unit slot: F adds one live activation, B removes
// one, I makes a W owed, and a free slot runs the oldest owed W, which removes
// one. It is exactly the order the pass writes at the end, so the limit holds
// for the result's peak as the checks count it (ops, not micro-batch sizes).
#include "elab/Squeeze.h"

#include <algorithm>
#include <deque>

namespace pipec {

using namespace ast;

namespace {

bool isBackward(OpKind k) { return k == OpKind::B || k == OpKind::I; }

class Squeezer {
public:
  Squeezer(ScheduleIR &ir, const SqueezeDecl &decl, DiagnosticEngine &diags, ElabBudget &budget)
      : ir_(ir), decl_(decl), diags_(diags), budget_(budget), ranks_(size_t(ir.numRanks)),
        stages_(ir.numStages), cells_(size_t(ir.numStages) * size_t(ir.numMicrobatches)) {}

  bool run(int64_t limit) {
    if (!supported())
      return false;
    if (!timeAsWritten())
      return true; // not runnable as written: the checks say why
    limit_ = limit >= 0 ? limit : writtenPeak();
    if (!prepare())
      return !budget_.exhausted;
    if (!compact())
      return false;
    rebuild();
    return true;
  }

private:
  size_t cell(int64_t stage, int64_t mb) const {
    return size_t(stage) * size_t(ir_.numMicrobatches) + size_t(mb);
  }
  int32_t rankOf(const Op &op, int64_t stage) const {
    return ir_.flows[op.flow].stageSlots[size_t(stage)].rank;
  }

  bool supported() {
    for (const RankOps &rank : ir_.ranks)
      for (const Op &op : rank.ops) {
        if (op.pair == PairRole::None && (op.kind == OpKind::F || isBackward(op.kind) ||
                                          op.kind == OpKind::W))
          continue;
        std::string what = op.pair != PairRole::None
                               ? std::string("an overlap pair")
                               : "'" + std::string(opKindName(op.kind)) + "'";
        diags_.report(DiagKind::SqueezeUnsupportedOp, decl_.range,
                      "'squeeze' moves single F, B, I and W ops; this schedule has " + what)
            .note(ir_.originOf(op).range, "written here")
            .note("drop 'squeeze', or write the op as single F, B, I or W ops");
        return false;
      }
    return true;
  }

  bool tick(uint64_t n) { return budget_.spend(n, diags_, decl_.range, "'squeeze'", "slots"); }

  // Unit-slot times of the written orders, each op as early as its
  // dependencies and its rank allow. False if some op never becomes ready or
  // an op is written twice.
  bool timeAsWritten() {
    endF_.assign(cells_, -1);
    endBack_.assign(cells_, -1);
    slot_.resize(ranks_);
    std::vector<size_t> pos(ranks_, 0);
    std::vector<int64_t> free(ranks_, 0);
    std::vector<char> queued(ranks_, 1);
    std::vector<int32_t> work;
    for (size_t r = ranks_; r-- > 0;)
      work.push_back(int32_t(r));
    auto wake = [&](int32_t r) {
      if (r >= 0 && !queued[size_t(r)]) {
        queued[size_t(r)] = 1;
        work.push_back(r);
      }
    };
    for (size_t r = 0; r < ranks_; ++r)
      slot_[r].assign(ir_.ranks[r].ops.size(), -1);
    while (!work.empty()) {
      size_t r = size_t(work.back());
      work.pop_back();
      queued[r] = 0;
      const std::vector<Op> &ops = ir_.ranks[r].ops;
      for (; pos[r] < ops.size(); ++pos[r]) {
        const Op &op = ops[pos[r]];
        size_t c = cell(op.stage, op.microbatch);
        int64_t ready = free[r];
        auto need = [&](int64_t end) {
          ready = end < 0 || ready < 0 ? -1 : std::max(ready, end);
        };
        if (op.kind == OpKind::F) {
          if (op.stage > 0)
            need(endF_[cell(op.stage - 1, op.microbatch)]);
        } else if (op.kind == OpKind::W) {
          need(endBack_[c]);
        } else {
          need(endF_[c]);
          if (op.stage + 1 < stages_)
            need(endBack_[cell(op.stage + 1, op.microbatch)]);
        }
        if (ready < 0)
          break;
        slot_[r][pos[r]] = ready;
        free[r] = ready + 1;
        if (op.kind == OpKind::F) {
          if (endF_[c] >= 0)
            return false;
          endF_[c] = ready + 1;
          if (op.stage + 1 < stages_)
            wake(rankOf(op, op.stage + 1));
        } else if (op.kind != OpKind::W) {
          if (endBack_[c] >= 0)
            return false;
          endBack_[c] = ready + 1;
          if (op.stage > 0)
            wake(rankOf(op, op.stage - 1));
        }
      }
    }
    for (size_t r = 0; r < ranks_; ++r)
      if (pos[r] < ir_.ranks[r].ops.size())
        return false;
    return true;
  }

  int64_t writtenPeak() const {
    int64_t peak = 0;
    for (const RankOps &rank : ir_.ranks) {
      int64_t live = 0;
      for (const Op &op : rank.ops) {
        live += op.kind == OpKind::F ? 1 : op.kind == OpKind::I ? 0 : -1;
        peak = std::max(peak, live);
      }
    }
    return peak;
  }

  // Per rank: the slots of its ops other than W (occ_), the W owed by each
  // I (wOf_), and the live / owed counts after each slot under the memory model.
  bool prepare() {
    occ_.resize(ranks_);
    live_.resize(ranks_);
    owed_.resize(ranks_);
    wOf_.assign(cells_, -1);
    for (size_t r = 0; r < ranks_; ++r) {
      const std::vector<Op> &ops = ir_.ranks[r].ops;
      int64_t horizon = 0;
      for (size_t i = 0; i < ops.size(); ++i) {
        if (ops[i].kind == OpKind::W) {
          size_t c = cell(ops[i].stage, ops[i].microbatch);
          if (wOf_[c] >= 0)
            return false; // a W written twice: left for the checks
          wOf_[c] = int32_t(i);
        } else {
          horizon = std::max(horizon, slot_[r][i] + 1);
        }
      }
      if (!tick(uint64_t(horizon)))
        return false;
      occ_[r].assign(size_t(horizon), -1);
      for (size_t i = 0; i < ops.size(); ++i)
        if (ops[i].kind != OpKind::W)
          occ_[r][size_t(slot_[r][i])] = int32_t(i);
    }
    for (size_t r = 0; r < ranks_; ++r) {
      live_[r].resize(occ_[r].size());
      owed_[r].resize(occ_[r].size());
      int64_t live = 0, owed = 0;
      for (size_t x = 0; x < occ_[r].size(); ++x) {
        step(r, occ_[r][x], live, owed);
        live_[r][x] = live;
        owed_[r][x] = owed;
      }
    }
    return true;
  }

  // One slot of the memory model: op `i` of rank r runs (-1: the slot is free).
  void step(size_t r, int32_t i, int64_t &live, int64_t &owed) const {
    if (i < 0) {
      if (owed > 0) {
        --owed;
        --live;
      }
      return;
    }
    const Op &op = ir_.ranks[r].ops[size_t(i)];
    if (op.kind == OpKind::F)
      ++live;
    else if (op.kind == OpKind::B)
      --live;
    else if (wOf_[cell(op.stage, op.microbatch)] >= 0)
      ++owed;
  }

  // Moves op i of rank r from slot `from` to the free slot `to` < from if live
  // stays within the limit at every slot whose count changes; the counts are
  // recomputed from `to` until they agree with the old ones again after `from`.
  bool tryMove(size_t r, int32_t i, int64_t from, int64_t to) {
    std::vector<int32_t> &occ = occ_[r];
    int64_t live = to > 0 ? live_[r][size_t(to - 1)] : 0;
    int64_t owed = to > 0 ? owed_[r][size_t(to - 1)] : 0;
    scratch_.clear();
    int64_t end = int64_t(occ.size());
    for (int64_t x = to; x < end; ++x) {
      int32_t at = x == to ? i : x == from ? -1 : occ[size_t(x)];
      step(r, at, live, owed);
      if (live > limit_) {
        tick(uint64_t(x - to + 1));
        return false;
      }
      if (x >= from && live == live_[r][size_t(x)] && owed == owed_[r][size_t(x)])
        break;
      scratch_.emplace_back(live, owed);
    }
    if (!tick(scratch_.size() + 1))
      return false;
    for (size_t k = 0; k < scratch_.size(); ++k) {
      live_[r][size_t(to) + k] = scratch_[k].first;
      owed_[r][size_t(to) + k] = scratch_[k].second;
    }
    occ[size_t(from)] = -1;
    occ[size_t(to)] = i;
    return true;
  }

  // Every op but W, in slot order (lower rank first at a slot), to the earliest
  // free slot after its dependencies' new slots that the limit allows.
  bool compact() {
    int64_t horizon = 0;
    for (const std::vector<int32_t> &occ : occ_)
      horizon = std::max(horizon, int64_t(occ.size()));
    newF_.assign(cells_, -1);
    newBack_.assign(cells_, -1);
    // The new slot of the last op moved of each (stage, F or backward): a
    // stage's forwards and backwards keep their written order.
    std::vector<int64_t> lastF(size_t(stages_), -1), lastBack(size_t(stages_), -1);
    for (int64_t t = 0; t < horizon; ++t)
      for (size_t r = 0; r < ranks_; ++r) {
        if (t >= int64_t(occ_[r].size()) || occ_[r][size_t(t)] < 0)
          continue;
        int32_t i = occ_[r][size_t(t)];
        const Op &op = ir_.ranks[r].ops[size_t(i)];
        // Ops before t on this rank have moved already, so the op at t is the
        // one written there.
        size_t c = cell(op.stage, op.microbatch);
        bool forward = op.kind == OpKind::F;
        int64_t after = forward ? lastF[size_t(op.stage)] : lastBack[size_t(op.stage)];
        if (forward) {
          if (op.stage > 0)
            after = std::max(after, newF_[cell(op.stage - 1, op.microbatch)]);
        } else {
          after = std::max(after, newF_[c]);
          if (op.stage + 1 < stages_)
            after = std::max(after, newBack_[cell(op.stage + 1, op.microbatch)]);
        }
        int64_t at = t;
        for (int64_t x = after + 1; x < t; ++x) {
          if (occ_[r][size_t(x)] >= 0)
            continue;
          if (tryMove(r, i, t, x)) {
            at = x;
            break;
          }
          if (budget_.exhausted)
            return false;
        }
        (forward ? newF_ : newBack_)[c] = at;
        (forward ? lastF : lastBack)[size_t(op.stage)] = at;
      }
    return true;
  }

  // Each rank's ops in their new slot order, a free slot running the oldest
  // owed W, the W's still owed after the last slot at the end.
  void rebuild() {
    for (size_t r = 0; r < ranks_; ++r) {
      std::vector<Op> &ops = ir_.ranks[r].ops;
      std::vector<Op> out;
      out.reserve(ops.size());
      std::deque<int32_t> owed;
      for (int32_t i : occ_[r]) {
        if (i < 0) {
          if (!owed.empty()) {
            out.push_back(ops[size_t(owed.front())]);
            owed.pop_front();
          }
          continue;
        }
        const Op &op = ops[size_t(i)];
        out.push_back(op);
        if (op.kind == OpKind::I) {
          int32_t w = wOf_[cell(op.stage, op.microbatch)];
          if (w >= 0)
            owed.push_back(w);
        }
      }
      for (int32_t w : owed)
        out.push_back(ops[size_t(w)]);
      if (out.size() == ops.size()) // every W had its I on this rank
        ops = std::move(out);
    }
  }

  ScheduleIR &ir_;
  const SqueezeDecl &decl_;
  DiagnosticEngine &diags_;
  ElabBudget &budget_;
  size_t ranks_;
  int64_t stages_;
  size_t cells_;
  int64_t limit_ = 0;
  std::vector<int64_t> endF_, endBack_;       // [cell]: unit-slot end as written; -1 not run
  std::vector<std::vector<int64_t>> slot_;    // [rank][op]: slot as written
  std::vector<std::vector<int32_t>> occ_;     // [rank][slot]: op index, -1 free (W's out)
  std::vector<std::vector<int64_t>> live_, owed_; // [rank][slot]: counts after the slot
  std::vector<int32_t> wOf_;                  // [cell]: index of its W on its rank, -1 none
  std::vector<int64_t> newF_, newBack_;       // [cell]: slot after the squeeze
  std::vector<std::pair<int64_t, int64_t>> scratch_;
};

} // namespace

bool runSqueeze(ScheduleIR &ir, int64_t limit, const SqueezeDecl &decl, DiagnosticEngine &diags,
                ElabBudget &budget) {
  return Squeezer(ir, decl, diags, budget).run(limit);
}

} // namespace pipec
