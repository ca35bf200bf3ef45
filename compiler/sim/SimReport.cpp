// The numbers of a simulation: text table and JSON (DESIGN §4 fields).
#include "sim/SimOutputs.h"

#include "check/OpText.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <fmt/format.h>

namespace pipec {

std::string formatNumber(double value) {
  std::string text = llvm::formatv("{0:F3}", value).str();
  while (!text.empty() && text.back() == '0')
    text.pop_back();
  if (!text.empty() && text.back() == '.')
    text.pop_back();
  return text == "-0" ? "0" : text;
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

  out << "critical path: " << sim.criticalPath.size() << " steps";
  const size_t kShown = 6;
  for (size_t i = 0; i < sim.criticalPath.size(); ++i) {
    if (sim.criticalPath.size() > 2 * kShown && i == kShown) {
      out << " -> ...";
      i = sim.criticalPath.size() - kShown;
    }
    const CriticalLink &link = sim.criticalPath[i];
    const StepTiming &step = sim.ranks[link.rank].steps[link.step];
    out << (i ? " -> " : ": ") << "rank " << link.rank << " " << stepLabel(ir, link.rank, step.op)
        << " [" << formatNumber(step.start) << ", " << formatNumber(step.end) << "]";
  }
  out << "\n";
}

void printSimJson(const ScheduleIR &ir, const CheckReport &report, const SimResult &sim,
                  llvm::raw_ostream &out) {
  llvm::json::Object params;
  for (const auto &[name, value] : ir.params)
    params[name] = value;
  llvm::json::Array ranks;
  for (size_t r = 0; r < sim.ranks.size(); ++r) {
    const RankTiming &t = sim.ranks[r];
    ranks.push_back(llvm::json::Object{{"rank", int64_t(r)},
                                       {"ops", int64_t(ir.ranks[r].ops.size())},
                                       {"busy", t.busy},
                                       {"bubble", t.bubble},
                                       {"utilization", t.utilization},
                                       {"peak_activations", report.memory[r].peakActivations},
                                       {"parameter_chunks", report.memory[r].parameterChunks}});
  }
  llvm::json::Array path;
  for (const CriticalLink &link : sim.criticalPath) {
    const StepTiming &step = sim.ranks[link.rank].steps[link.step];
    path.push_back(llvm::json::Object{{"rank", link.rank},
                                      {"step", stepLabel(ir, link.rank, step.op)},
                                      {"start", step.start},
                                      {"end", step.end}});
  }
  size_t count = sim.ranks.size();
  double utilization = sim.makespan > 0 && count ? sim.totalBusy() / (sim.makespan * count) : 1;
  llvm::json::Object root{
      {"schedule", ir.name},
      {"params", std::move(params)},
      {"makespan", sim.makespan},
      {"ranks", std::move(ranks)},
      {"totals", llvm::json::Object{{"busy", sim.totalBusy()},
                                    {"bubble", sim.totalBubble()},
                                    {"mean_bubble", count ? sim.totalBubble() / count : 0.0},
                                    {"utilization", utilization},
                                    {"peak_activations", peakOf(report)},
                                    {"ops", int64_t(ir.totalOps())},
                                    {"messages", int64_t(report.comm->messages.size())}}},
      {"critical_path", std::move(path)}};
  out << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}

} // namespace pipec
