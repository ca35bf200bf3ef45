#include "elab/Placement.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <tuple>

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
          d->note("with " + eval.describeNames(culprit));
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

  // Every (flow, stage) in slot order, then each rank's slots appended in order.
  struct Placed {
    Slot slot;
    int64_t begin; // the flow's first micro-batch: a slot's uses are kept sorted by it
    uint32_t flow;
    int32_t stage;
  };
  std::vector<Placed> placed;
  placed.reserve(ir.flows.size() * ir.numStages);
  for (uint32_t f = 0; f < ir.flows.size(); ++f)
    for (int64_t s = 0; s < ir.numStages; ++s)
      placed.push_back({ir.flows[f].stageSlots[s], ir.flows[f].begin, f, static_cast<int32_t>(s)});
  std::sort(placed.begin(), placed.end(), [](const Placed &a, const Placed &b) {
    return std::tie(a.slot.rank, a.slot.chunk, a.begin) < std::tie(b.slot.rank, b.slot.chunk, b.begin);
  });
  slots.assign(ir.numRanks, {});
  for (const Placed &p : placed) {
    const Flow &flow = ir.flows[p.flow];
    SlotState &slot = slots[p.slot.rank].append(p.slot.chunk);
    slot.uses.push_back({p.flow, p.stage, flow.begin, flow.end});
    slot.count += flow.end - flow.begin;
  }
  return true;
}

} // namespace pipec
