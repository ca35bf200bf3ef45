#include "elab/Placement.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <utility>

namespace pipec {

using namespace ast;

namespace {

struct FlowSource {
  const Placement *placement;
  llvm::SMRange nameRange;
};

std::string slotName(int64_t rank, int64_t chunk) {
  return "rank " + std::to_string(rank) + ", chunk " + std::to_string(chunk);
}

// Evaluates the flows' ranges and checks that they partition 0..microbatches.
bool evaluateFlows(const Schedule &schedule, Evaluator &eval, DiagnosticEngine &diags,
                   ScheduleIR &ir, std::vector<FlowSource> &sources) {
  if (schedule.placement) {
    ir.flows.push_back({"main", 0, ir.numMicrobatches, {}, &*schedule.placement});
    sources.push_back({&*schedule.placement, schedule.placement->range});
    return true;
  }
  bool ok = true;
  for (const FlowDecl &decl : schedule.flows) {
    int64_t lo, hi;
    if (!eval.eval(*decl.lo, lo) || !eval.eval(*decl.hi, hi))
      return false;
    if (lo < 0 || hi > ir.numMicrobatches || lo >= hi) {
      auto &d = diags.report(DiagKind::FlowRange, decl.nameRange,
                             "flow '" + decl.name + "' covers micro-batches " + std::to_string(lo) +
                                 ".." + std::to_string(hi) + (lo >= hi ? ", which is empty" : "") +
                                 "; it must lie within 0.." + std::to_string(ir.numMicrobatches));
      std::string loValues = eval.describeNames(*decl.lo), hiValues = eval.describeNames(*decl.hi);
      std::string values = loValues.empty() || loValues == hiValues ? hiValues
                           : hiValues.empty()                      ? loValues
                                                                   : loValues + ", " + hiValues;
      if (!values.empty())
        d.note("with " + values);
      ok = false;
      continue;
    }
    ir.flows.push_back({decl.name, lo, hi, {}, &decl.placements.front()});
    sources.push_back({&decl.placements.front(), decl.nameRange});
  }
  if (!ok)
    return false;

  std::vector<size_t> order(ir.flows.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return ir.flows[a].begin < ir.flows[b].begin; });
  int64_t covered = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const Flow &flow = ir.flows[order[k]];
    if (flow.begin < covered) {
      const Flow &previous = ir.flows[order[k - 1]];
      diags.report(DiagKind::FlowOverlap, sources[order[k]].nameRange,
                   "flows '" + previous.name + "' and '" + flow.name +
                       "' both contain micro-batch " + std::to_string(flow.begin))
          .note(sources[order[k - 1]].nameRange, "flow '" + previous.name + "' is declared here");
      ok = false;
    } else if (flow.begin > covered) {
      diags.report(DiagKind::FlowGap, sources[order[k]].nameRange,
                   "micro-batches " + std::to_string(covered) + ".." + std::to_string(flow.begin) +
                       " belong to no flow");
      ok = false;
    }
    covered = std::max(covered, flow.end);
  }
  if (ok && covered < ir.numMicrobatches) {
    diags.report(DiagKind::FlowGap, sources[order.back()].nameRange,
                 "micro-batches " + std::to_string(covered) + ".." +
                     std::to_string(ir.numMicrobatches) + " belong to no flow")
        .note("every micro-batch 0.." + std::to_string(ir.numMicrobatches) +
              " must belong to exactly one flow");
    ok = false;
  }
  return ok;
}

} // namespace

bool elaboratePlacement(const Schedule &schedule, Evaluator &eval, DiagnosticEngine &diags,
                        ScheduleIR &ir, SlotTable &slots) {
  std::vector<FlowSource> sources;
  if (!evaluateFlows(schedule, eval, diags, ir, sources))
    return false;

  struct Holder {
    int32_t stage;
    uint32_t flow;
  };
  // Keyed by the (rank, chunk) pair: its hash mixes both halves, where a packed
  // 64-bit key hashes every (rank << 32 | chunk) to the same bucket.
  llvm::DenseMap<std::pair<int32_t, int32_t>, Holder> holders; // first stage placed there
  bool ok = true;
  for (uint32_t f = 0; f < ir.flows.size(); ++f) {
    Flow &flow = ir.flows[f];
    const Placement &place = *sources[f].placement;
    flow.stageSlots.resize(ir.numStages);
    for (int64_t s = 0; s < ir.numStages; ++s) {
      eval.env()[place.stageVar.id] = s;
      int64_t rank, chunk = 0;
      if (!eval.eval(*place.rank, rank) || (place.chunk && !eval.eval(*place.chunk, chunk)))
        return false;
      if (rank < 0 || rank >= ir.numRanks || chunk < 0 || chunk >= ir.numStages) {
        bool badRank = rank < 0 || rank >= ir.numRanks;
        const Expr &culprit = badRank ? *place.rank : *place.chunk;
        if (Diagnostic *d = diags.reportOnce(
                DiagKind::PlacementOutOfRange, culprit.range,
                "stage " + std::to_string(s) + " is placed on " +
                    (badRank ? "rank " + std::to_string(rank) + ", but ranks are 0 to " +
                                   std::to_string(ir.numRanks - 1)
                             : "chunk " + std::to_string(chunk) + ", but chunks are 0 to " +
                                   std::to_string(ir.numStages - 1))))
          if (std::string values = eval.describeNames(culprit); !values.empty())
            d->note("with " + values); // a constant has no names to show
        ok = false;
        continue;
      }
      flow.stageSlots[s] = {static_cast<int32_t>(rank), static_cast<int32_t>(chunk)};
      auto [it, inserted] =
          holders.try_emplace({static_cast<int32_t>(rank), static_cast<int32_t>(chunk)},
                              Holder{static_cast<int32_t>(s), f});
      if (!inserted && it->second.stage != s) {
        const Flow &other = ir.flows[it->second.flow];
        if (Diagnostic *d = diags.reportOnce(
                DiagKind::SlotConflict, place.range,
                "stages " + std::to_string(it->second.stage) + " and " + std::to_string(s) +
                    " are both placed on " + slotName(rank, chunk) +
                    "; a chunk holds the weights of one stage"))
          d->note(sources[it->second.flow].placement->range,
                  "stage " + std::to_string(it->second.stage) + " is placed there" +
                      (schedule.placement ? "" : " by flow '" + other.name + "'"));
        ok = false;
      }
    }
  }
  if (!ok)
    return false;
  holders.shrink_and_clear();

  // Every (flow, stage) grouped by rank (a counting sort: linear in the stages),
  // then each rank's few sorted by chunk, and its slots appended in that order.
  struct Placed {
    int32_t chunk;
    int32_t stage;
    uint32_t flow;
  };
  std::vector<size_t> rankStart(ir.numRanks + 1, 0);
  for (const Flow &flow : ir.flows)
    for (const Slot &slot : flow.stageSlots)
      ++rankStart[slot.rank + 1];
  for (int64_t r = 0; r < ir.numRanks; ++r)
    rankStart[r + 1] += rankStart[r];
  std::vector<Placed> placed(rankStart.back());
  std::vector<size_t> next(rankStart.begin(), rankStart.end() - 1);
  for (uint32_t f = 0; f < ir.flows.size(); ++f)
    for (int64_t s = 0; s < ir.numStages; ++s) {
      const Slot &slot = ir.flows[f].stageSlots[s];
      placed[next[slot.rank]++] = {slot.chunk, static_cast<int32_t>(s), f};
    }
  next = {};
  slots.assign(ir.numRanks, {});
  for (int64_t r = 0; r < ir.numRanks; ++r) {
    auto first = placed.begin() + rankStart[r], last = placed.begin() + rankStart[r + 1];
    // A slot's uses are kept sorted by their flow's first micro-batch.
    std::sort(first, last, [&](const Placed &a, const Placed &b) {
      return std::make_pair(a.chunk, ir.flows[a.flow].begin) <
             std::make_pair(b.chunk, ir.flows[b.flow].begin);
    });
    // Sized exactly: millions of small vectors grown one by one cost more in
    // malloc than the rest of placement.
    size_t chunks = 0;
    for (auto it = first; it != last; ++it)
      chunks += it == first || it->chunk != (it - 1)->chunk;
    slots[r].all().reserve(chunks);
    for (auto it = first; it != last;) {
      auto end = std::find_if(it, last, [&](const Placed &p) { return p.chunk != it->chunk; });
      SlotState &slot = slots[r].append(it->chunk);
      slot.uses.reserve(end - it);
      for (; it != end; ++it) {
        const Flow &flow = ir.flows[it->flow];
        slot.uses.push_back({it->flow, it->stage, flow.begin, flow.end});
        slot.count += flow.end - flow.begin;
      }
    }
  }
  return true;
}

} // namespace pipec
