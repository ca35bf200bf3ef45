// The numbers of a simulation: text table and JSON (DESIGN §4 fields).
#include "sim/SimOutputs.h"
#include "sim/TimedMemory.h"

#include "check/OpText.h"

#include "llvm/Support/JSON.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace pipec {

std::string undrawableReason(const SimResult &sim) {
  // Every time is at most the makespan, so a finite makespan leaves only NaN to find.
  if (!std::isfinite(sim.makespan))
    return "the makespan is " + formatNumber(sim.makespan);
  for (uint32_t k = 0; k < sim.stepEnd.size(); ++k)
    if (std::isnan(sim.stepStart(k)) || std::isnan(sim.stepEnd[k]))
      return "a step's time is nan";
  for (double arrived : sim.messageArrived) // sent <= arrived
    if (!std::isfinite(arrived))
      return "a message's time is not finite";
  return "";
}

std::string stepLabel(const ScheduleIR &ir, int64_t rank, uint32_t firstOp) {
  const std::vector<Op> &ops = ir.ranks[rank].ops;
  if (ops[firstOp].pair == PairRole::First)
    return "FB(" + opShortName(ir, ops[firstOp]) + "|" + opShortName(ir, ops[firstOp + 1]) + ")";
  return opShortName(ir, ops[firstOp]);
}

static int64_t peakOf(const CheckReport &report) {
  int64_t peak = 0;
  for (const RankMemory &m : report.memory)
    peak = std::max(peak, m.peakActivations);
  return peak;
}

void printSimText(const ScheduleIR &ir, const CheckReport &report, const SimResult &sim,
                  llvm::raw_ostream &out) {
  out << "schedule " << ir.name << " (";
  for (size_t i = 0; i < ir.params.size(); ++i)
    out << (i ? ", " : "") << ir.params[i].first << " = " << ir.params[i].second;
  size_t ranks = sim.ranks.size();
  double meanBubble = ranks ? sim.totalBubble() / ranks : 0;
  out << "): makespan " << formatNumber(sim.makespan) << ", mean bubble "
      << formatNumber(meanBubble) << " ("
      << formatNumber(sim.makespan > 0 ? 100 * meanBubble / sim.makespan : 0) << "%)\n";
  const char *kRow = "{:>6} {:>10} {:>10} {:>12} {:>17}\n";
  out << fmt::format(kRow, "rank", "busy", "bubble", "utilization", "peak activations");
  for (size_t r = 0; r < ranks; ++r) {
    const RankTiming &t = sim.ranks[r];
    out << fmt::format(kRow, r, formatNumber(t.busy), formatNumber(t.bubble),
                       formatNumber(100 * t.utilization) + "%",
                       report.memory[r].peakActivations);
  }
  double utilization = sim.makespan > 0 && ranks ? sim.totalBusy() / (sim.makespan * ranks) : 1;
  out << fmt::format(kRow, "total", formatNumber(sim.totalBusy()), formatNumber(sim.totalBubble()),
                     formatNumber(100 * utilization) + "%", peakOf(report));
  // With activation_bytes the peaks have a size: the activations', not the parameters'.
  double maxBytes = 0;
  size_t maxRank = 0;
  for (size_t r = 0; r < report.memory.size(); ++r)
    if (report.memory[r].peakBytes > maxBytes) {
      maxBytes = report.memory[r].peakBytes;
      maxRank = r;
    }
  if (maxBytes > 0) {
    out << "peak activation bytes: " << formatNumber(maxBytes) << " (rank " << maxRank << ")";
    constexpr size_t kListed = 16;
    if (report.memory.size() <= kListed) {
      out << "; per rank";
      for (const RankMemory &m : report.memory)
        out << " " << formatNumber(m.peakBytes);
    }
    out << "\n";
  }
  if (sim.plan->hasCopyStreams()) { // the copies and transfers run beside compute: their timed peak too
    std::vector<int64_t> timed = timedPeakActivations(ir, sim);
    auto most = std::max_element(timed.begin(), timed.end());
    out << "peak activations with copies timed: " << *most << " (rank " << (most - timed.begin())
        << ")";
    constexpr size_t kListed = 16;
    if (timed.size() <= kListed) {
      out << "; per rank";
      for (int64_t peak : timed)
        out << " " << peak;
    }
    out << "\n";
  }

  out << "critical path: " << sim.criticalPath.size() << " steps";
  const size_t kShown = 6;
  for (size_t i = 0; i < sim.criticalPath.size(); ++i) {
    if (sim.criticalPath.size() > 2 * kShown && i == kShown) {
      out << " -> ...";
      i = sim.criticalPath.size() - kShown;
    }
    const CriticalLink &link = sim.criticalPath[i];
    StepTiming step = sim.step(link.step);
    out << (i ? " -> " : ": ") << "rank " << link.rank << " " << stepLabel(ir, link.rank, step.op)
        << " [" << formatNumber(step.start) << ", " << formatNumber(step.end) << "]";
  }
  out << "\n";
}

// Streamed: nothing the size of the schedule is built in memory. Keys are written
// in sorted order, as llvm::json prints an Object.
void printSimJson(const ScheduleIR &ir, const CheckReport &report, const SimResult &sim,
                  llvm::raw_ostream &out,
                  const std::function<void(llvm::json::OStream &)> &extra) {
  size_t count = sim.ranks.size();
  double utilization = sim.makespan > 0 && count ? sim.totalBusy() / (sim.makespan * count) : 1;
  llvm::json::OStream j(out, 2);
  j.object([&] {
    j.attributeArray("critical_path", [&] {
      for (const CriticalLink &link : sim.criticalPath) {
        StepTiming step = sim.step(link.step);
        j.object([&] {
          j.attribute("end", step.end);
          j.attribute("rank", link.rank);
          j.attribute("start", step.start);
          j.attribute("step", stepLabel(ir, link.rank, step.op));
        });
      }
    });
    if (extra)
      extra(j);
    j.attribute("makespan", sim.makespan);
    j.attributeObject("params", [&] {
      std::vector<std::pair<std::string, int64_t>> params = ir.params;
      std::sort(params.begin(), params.end());
      for (const auto &[name, value] : params)
        j.attribute(name, value);
    });
    std::vector<int64_t> timed; // memory ops only: the peak under the simulated times
    if (sim.plan->hasCopyStreams())
      timed = timedPeakActivations(ir, sim);
    j.attributeArray("ranks", [&] {
      for (size_t r = 0; r < count; ++r) {
        const RankTiming &t = sim.ranks[r];
        j.object([&] {
          j.attribute("bubble", t.bubble);
          j.attribute("busy", t.busy);
          j.attribute("ops", int64_t(ir.ranks[r].ops.size()));
          j.attribute("parameter_chunks", report.memory[r].parameterChunks);
          j.attribute("peak_activations", report.memory[r].peakActivations);
          j.attribute("rank", int64_t(r));
          if (!timed.empty())
            j.attribute("timed_peak_activations", timed[r]);
          j.attribute("utilization", t.utilization);
        });
      }
    });
    j.attribute("schedule", ir.name);
    // Default costs are one rank's share / this (CostModel.h).
    j.attribute("stages_per_rank", CostModel::stagesPerRank(ir));
    j.attributeObject("totals", [&] {
      j.attribute("bubble", sim.totalBubble());
      j.attribute("busy", sim.totalBusy());
      j.attribute("mean_bubble", count ? sim.totalBubble() / count : 0.0);
      j.attribute("messages", int64_t(report.comm->messages.size()));
      j.attribute("ops", int64_t(ir.totalOps()));
      j.attribute("peak_activations", peakOf(report));
      j.attribute("utilization", utilization);
    });
  });
  out << "\n";
}

} // namespace pipec
