// Placement and parameter copies: how many (rank, chunk) slots hold each stage,
// within the `copies` budget, and the gradient-sync group of each replicated stage.
#include "check/CheckPasses.h"

#include <algorithm>
#include <tuple>

namespace pipec {

static std::string slotList(const std::vector<Slot> &slots) {
  std::string text;
  for (const Slot &slot : slots)
    text += (text.empty() ? "" : "; ") + std::string("rank ") + std::to_string(slot.rank) +
            ", chunk " + std::to_string(slot.chunk);
  return text;
}

bool checkParameterCopies(const ScheduleIR &ir, DiagnosticEngine &diags,
                          std::vector<SyncGroup> &syncGroups) {
  // One stage at a time (a reused buffer, no per-stage table): its distinct slots
  // over all flows, each with the first flow that put it there, in flow order.
  // Sorting, not a search per flow, keeps many flows from costing flows^2.
  std::vector<std::pair<Slot, uint32_t>> holders;
  auto slotKey = [](const std::pair<Slot, uint32_t> &h) {
    return std::make_tuple(h.first.rank, h.first.chunk, h.second);
  };
  bool ok = true;
  for (int64_t s = 0; s < ir.numStages; ++s) {
    holders.clear();
    for (uint32_t f = 0; f < ir.flows.size(); ++f)
      holders.push_back({ir.flows[f].stageSlots[s], f});
    std::sort(holders.begin(), holders.end(),
              [&](const auto &a, const auto &b) { return slotKey(a) < slotKey(b); });
    holders.erase(std::unique(holders.begin(), holders.end(),
                              [](const auto &a, const auto &b) {
                                return a.first.rank == b.first.rank &&
                                       a.first.chunk == b.first.chunk;
                              }),
                  holders.end());
    std::sort(holders.begin(), holders.end(),
              [](const auto &a, const auto &b) { return a.second < b.second; });
    if (holders.size() <= 1)
      continue;
    std::vector<Slot> slots;
    for (const auto &h : holders)
      slots.push_back(h.first);
    syncGroups.push_back({static_cast<int32_t>(s), slots});
    if (static_cast<int64_t>(holders.size()) <= ir.copies)
      continue;
    const ast::Placement *second = ir.flows[holders[1].second].placement;
    if (Diagnostic *d = diags.reportOnce(
            DiagKind::CopiesExceeded, second->range,
            "stage " + std::to_string(s) + " is held by " + std::to_string(holders.size()) +
                " slots (" + slotList(slots) + "), but the copies budget is " +
                std::to_string(ir.copies))) {
      d->note(ir.flows[holders[0].second].placement->range,
              "stage " + std::to_string(s) + " is also placed here, by flow '" +
                  ir.flows[holders[0].second].name + "'");
      d->note("declare 'copies " + std::to_string(holders.size()) +
              ";' if this is intended: each copy holds the stage's full parameters and "
              "optimizer state, and the copies' gradients are summed every step");
    }
    ok = false;
  }
  return ok;
}

} // namespace pipec
