#include "driver/Explain.h"

#include "check/OpText.h"
#include "support/NumberText.h"

#include "llvm/Support/Format.h"

namespace pipec {

static void printSlot(const Slot &slot, llvm::raw_ostream &out) {
  out << "rank " << slot.rank << " chunk " << slot.chunk;
}

void explainSchedule(const ScheduleIR &ir, const CheckReport &report, llvm::raw_ostream &out) {
  out << "schedule " << ir.name << " (";
  for (size_t i = 0; i < ir.params.size(); ++i)
    out << (i ? ", " : "") << ir.params[i].first << " = " << ir.params[i].second;
  out << "): " << ir.numRanks << " ranks, " << ir.numStages << " stages, " << ir.numMicrobatches
      << " micro-batches, " << ir.totalOps() << " ops\n";

  out << "placement:\n";
  for (const Flow &flow : ir.flows) {
    out << "  flow " << flow.name << " (micro-batches " << flow.begin << " to " << flow.end - 1
        << "):";
    for (size_t s = 0; s < flow.stageSlots.size(); ++s) {
      out << (s ? "," : "") << " stage " << s << " -> ";
      printSlot(flow.stageSlots[s], out);
    }
    out << "\n";
  }

  out << "gradient-sync groups (copies " << ir.copies << "):";
  if (report.syncGroups.empty())
    out << " none, every stage has one copy";
  out << "\n";
  for (const SyncGroup &group : report.syncGroups) {
    out << "  stage " << group.stage << ": all-reduce over ";
    for (size_t i = 0; i < group.slots.size(); ++i) {
      out << (i ? " + " : "");
      printSlot(group.slots[i], out);
    }
    out << "\n";
  }

  out << "per rank:\n";
  for (size_t r = 0; r < ir.ranks.size(); ++r) {
    const RankMemory &m = report.memory[r];
    out << llvm::format("  rank %zu: %zu ops, peak activations %lld", r, ir.ranks[r].ops.size(),
                        (long long)m.peakActivations);
    // The bytes are the activations' (activation_bytes), so they follow them.
    if (m.peakBytes > 0)
      out << " (" << formatFixed(m.peakBytes, 0) << " bytes)";
    out << llvm::format(", parameter chunks %lld", (long long)m.parameterChunks);
    if (report.comm) {
      out << ", sends " << report.comm->ranks[r].sends.size() << ", receives "
          << report.comm->ranks[r].receives.size();
      // Messages received ahead of their op (sender's order), not in the peak above.
      if (m.peakHeldMessages > 0)
        out << ", held messages " << m.peakHeldMessages << " (at "
            << opShortName(ir, ir.ranks[r].ops[m.peakHeldOp]) << ")";
    }
    out << "\n";
  }
  if (report.comm)
    out << "messages: " << report.comm->messages.size()
        << " point-to-point, received in each sender's order, proved free of deadlock\n";
}

} // namespace pipec
