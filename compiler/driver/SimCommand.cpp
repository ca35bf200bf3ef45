// `pipec sim`: simulates checked schedules under a cost model.
//  - one file: the numbers (text or JSON), optionally a timeline, an SVG and a trace;
//  - several files (--compare) and/or --sweep NAME=v1,v2: one table, one row each.
#include "driver/Commands.h"
#include "driver/Reporting.h"

#include "diag/DiagnosticRenderer.h"

#include "sim/SimOutputs.h"

#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <memory>

namespace pipec {

namespace {

struct Row {
  std::string schedule, setting;
  double makespan, meanBubble, utilization;
  int64_t peakActivations, parameterChunks, copies;
};

// Compiles, checks and simulates one file; prints diagnostics. Null on failure.
std::unique_ptr<Compilation> compileAndCheck(const std::string &file, const CommonArgs &args,
                                             const ElabOptions &elab, int &status) {
  auto compilation = std::make_unique<Compilation>(file);
  compilation->diags().setErrorLimit(args.errorLimit);
  compilation->diags().setWarningPolicy(args.warnings);
  bool ok = compilation->runAll(elab, args.checks);
  status = std::max(status, finish(*compilation, args));
  return ok ? std::move(compilation) : nullptr;
}

// Finite costs whose sums overflow: no number the simulation gives means anything.
void reportNonFiniteResult(Compilation &compilation, const CommonArgs &args) {
  DiagnosticEngine diags(compilation.sources());
  diags.report(DiagKind::NonFiniteResult,
               "simulating '" + compilation.path() + "' overflows a double: the costs are too "
               "large for their sums to be finite")
      .note("scale the costs down, e.g. to milliseconds instead of nanoseconds");
  renderText(diags, llvm::errs(), args.color);
}

void printTable(const std::vector<Row> &rows, llvm::raw_ostream &out) {
  const char *kRow = "{:<22} {:<10} {:>10} {:>10} {:>9} {:>12} {:>10} {:>12} {:>7}\n";
  out << fmt::format(kRow, "schedule", "setting", "makespan", "bubble", "bubble %", "utilization",
                     "peak act.", "params/rank", "copies");
  for (const Row &r : rows)
    out << fmt::format(kRow, r.schedule, r.setting, formatNumber(r.makespan),
                       formatNumber(r.meanBubble),
                       formatNumber(r.makespan > 0 ? 100 * r.meanBubble / r.makespan : 0) + "%",
                       formatNumber(100 * r.utilization) + "%", r.peakActivations,
                       r.parameterChunks, r.copies);
}

} // namespace

int runSim(const std::vector<std::string> &files, const SimArgs &sim, const CommonArgs &args) {
  int status = kExitClean;
  bool table = files.size() > 1 || sim.compare || !sim.sweepValues.empty();
  std::vector<int64_t> sweep = sim.sweepValues;
  if (sweep.empty())
    sweep.push_back(0); // one run without a sweep value

  std::vector<Row> rows;
  for (const std::string &file : files) {
    for (int64_t value : sweep) {
      ElabOptions elab = args.elab;
      std::string setting = "-";
      if (!sim.sweepValues.empty()) {
        elab.defines.emplace_back(sim.sweepName, value);
        setting = sim.sweepName + "=" + std::to_string(value);
      }
      auto compilation = compileAndCheck(file, args, elab, status);
      if (!compilation)
        continue;
      compilation->releaseCheckContext();
      const ScheduleIR &ir = *compilation->ir();
      const CheckReport &report = *compilation->report();
      CostModel costs = CostModel::build(ir, args.costs);
      SimResult result = simulate(ir, report, costs);
      if (!std::isfinite(result.makespan) || !std::isfinite(result.totalBusy()) ||
          !std::isfinite(result.totalBubble())) {
        reportNonFiniteResult(*compilation, args);
        status = std::max(status, int(kExitErrors));
        continue;
      }
      if (table) {
        int64_t peak = 0, chunks = 0;
        for (const RankMemory &m : report.memory) {
          peak = std::max(peak, m.peakActivations);
          chunks = std::max(chunks, m.parameterChunks);
        }
        size_t ranks = result.ranks.size();
        rows.push_back({ir.name, setting, result.makespan,
                        ranks ? result.totalBubble() / ranks : 0,
                        result.makespan > 0 && ranks ? result.totalBusy() / (result.makespan * ranks)
                                                     : 1,
                        peak, chunks, ir.copies});
        continue;
      }
      if (sim.json)
        printSimJson(ir, report, result, llvm::outs());
      else
        printSimText(ir, report, result, llvm::outs());
      // Pictures and the trace draw times: refuse them, clearly, when one is not finite.
      bool drawing = sim.timeline || !sim.svgPath.empty() || !sim.tracePath.empty();
      std::string undrawable = drawing ? undrawableReason(result) : "";
      if (!undrawable.empty()) {
        llvm::errs() << "pipec: error: cannot draw the timeline, SVG or trace of '" << file
                     << "': " << undrawable << "\n";
        status = std::max(status, int(kExitUsage));
        continue;
      }
      if (sim.timeline)
        printTimeline(ir, result, llvm::outs());
      if (!sim.svgPath.empty() &&
          !writeOutputFile(sim.svgPath, [&](llvm::raw_ostream &o) { writeSvg(ir, result, o); }))
        status = std::max(status, int(kExitUsage));
      if (!sim.tracePath.empty() &&
          !writeOutputFile(sim.tracePath,
                     [&](llvm::raw_ostream &o) { writeChromeTrace(ir, report, result, o); }))
        status = std::max(status, int(kExitUsage));
    }
  }
  if (table && !rows.empty())
    printTable(rows, llvm::outs());
  return status;
}

} // namespace pipec
