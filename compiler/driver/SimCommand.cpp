// `pipec sim`: simulates checked schedules under a cost model.
//  - one file: the numbers (text or JSON), optionally a timeline, an SVG and a trace;
//  - several files (--compare) and/or --sweep NAME=v1,v2: one table, one row each.
#include "driver/Commands.h"
#include "driver/PlanSetup.h"
#include "driver/Reporting.h"
#include "driver/SimUnits.h"

#include "diag/DiagnosticRenderer.h"

#include "sim/SimOutputs.h"

#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>

namespace pipec {

namespace {

struct Row {
  std::string schedule, setting;
  double makespan, meanBubble, utilization;
  int64_t peakActivations, parameterChunks, copies;
  double stagesPerRank;
  std::string failure; // set: the setting did not pass the checks, and why
  bool givenCosts = false; // costs from the file, --cost(s) or --sweep (per stage, as given)
};

// The normalisation rule, stated where the numbers are: default costs are one
// rank's share of the model divided by the stages it holds (CostModel.h).
std::string costRule(const ScheduleIR &ir) {
  double v = CostModel::stagesPerRank(ir), s = 1 / v;
  return "costs per stage = rank share / v, v = " + formatNumber(v) + " (defaults F=" +
         formatNumber(s) + " B=" + formatNumber(2 * s) + " W=" + formatNumber(s) +
         "; given costs are per stage)\n";
}

// Why a setting fails, in a table cell: "FAILED: Deadlock (2 errors)", or
// "UNSUPPORTED: <message>" when only requires fail.
std::string failureCell(const DiagnosticEngine &diags) {
  const Diagnostic *first = nullptr;
  bool onlyRequires = true;
  for (const Diagnostic &d : diags.diagnostics()) {
    if (d.severity != Severity::Error)
      continue;
    first = first ? first : &d;
    onlyRequires &= d.kind == DiagKind::RequireFailed;
  }
  if (!first)
    return "FAILED";
  if (onlyRequires)
    return "UNSUPPORTED: " + first->message;
  return std::string("FAILED: ") + diagInfo(first->kind).name + " (" +
         std::to_string(diags.errorCount()) + (diags.errorCount() == 1 ? " error)" : " errors)");
}

// Compiles, checks and simulates one file; prints diagnostics. Null on failure,
// with `failure` saying why.
std::unique_ptr<Compilation> compileAndCheck(const std::string &file, const CommonArgs &args,
                                             const ElabOptions &elab, int &status,
                                             std::string &failure, std::string &name) {
  auto compilation = std::make_unique<Compilation>(file);
  compilation->diags().setErrorLimit(args.errorLimit);
  compilation->diags().setWarningPolicy(args.warnings);
  bool ok = compilation->runAll(elab, args.checks);
  status = std::max(status, finish(*compilation, args));
  if (!ok) {
    failure = failureCell(compilation->diags());
    name = compilation->ast() ? compilation->ast()->name : file;
  }
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

// Given costs are per stage and are not divided by v: say what that means for the
// rows of this table, since a table is where schedules are compared.
void printGivenCostRule(const std::vector<Row> &rows, llvm::raw_ostream &out) {
  std::vector<double> vs;
  bool given = false;
  for (const Row &r : rows) {
    if (!r.failure.empty())
      continue;
    given |= r.givenCosts;
    if (std::find(vs.begin(), vs.end(), r.stagesPerRank) == vs.end())
      vs.push_back(r.stagesPerRank);
  }
  if (!given)
    return;
  std::sort(vs.begin(), vs.end());
  std::string list;
  for (double v : vs)
    list += (list.empty() ? "" : ", ") + formatNumber(v);
  if (vs.size() <= 1)
    out << "given costs are per stage, not divided by v; every schedule here has v = " << list
        << ", so each rank's share is the same\n";
  else
    out << "note: given costs are per stage, not divided by v, and v differs here (" << list
        << "): a rank with v stages does v times one stage's work, so rows with different v "
           "do not compare equal rank shares; give each schedule rank share / v per stage\n";
}

void printTable(const std::vector<Row> &rows, llvm::raw_ostream &out) {
  const char *kRow = "{:<22} {:<10} {:>10} {:>10} {:>9} {:>12} {:>10} {:>12} {:>7} {:>4}\n";
  out << "costs per stage = rank share / v, v = stages per rank (given costs are per stage)\n";
  printGivenCostRule(rows, out);
  out << fmt::format(kRow, "schedule", "setting", "makespan", "bubble", "bubble %", "utilization",
                     "peak act.", "params/rank", "copies", "v");
  for (const Row &r : rows)
    if (!r.failure.empty())
      out << fmt::format("{:<22} {:<10} {}\n", r.schedule, r.setting, r.failure);
    else
      out << fmt::format(kRow, r.schedule, r.setting, formatNumber(r.makespan),
                       formatNumber(r.meanBubble),
                       formatNumber(r.makespan > 0 ? 100 * r.meanBubble / r.makespan : 0) + "%",
                       formatNumber(100 * r.utilization) + "%", r.peakActivations,
                       r.parameterChunks, r.copies, formatNumber(r.stagesPerRank));
}

} // namespace

int runSim(const std::vector<std::string> &files, const SimArgs &sim, const CommonArgs &args) {
  int status = kExitClean;
  bool table = files.size() > 1 || sim.compare || !sim.sweep.empty();
  std::vector<SimArgs::SweepPoint> sweep = sim.sweep;
  if (sweep.empty())
    sweep.push_back({"-", {}, {}}); // one run without a sweep value

  // --model: costs in seconds and bytes, below any --costs / --cost given.
  plan::PlanInputs units;
  if (sim.model.given()) {
    std::string error;
    if (!loadPlanInputs(sim.model, units, error)) {
      llvm::errs() << "pipec: error: " << error << "\n";
      return kExitUsage;
    }
  }

  std::vector<Row> rows;
  for (const std::string &file : files) {
    for (const SimArgs::SweepPoint &point : sweep) {
      ElabOptions elab = args.elab;
      elab.defines.insert(elab.defines.end(), point.defines.begin(), point.defines.end());
      CommonArgs runArgs = args;
      runArgs.costs.insert(runArgs.costs.end(), point.costs.begin(), point.costs.end());
      runArgs.checks.costs = runArgs.costs; // the memory check sees the swept cost too
      const std::string &setting = point.setting;
      std::optional<plan::Candidate> inUnits;
      if (sim.model.given()) {
        std::string error;
        inUnits = costInUnits(file, elab, units, error);
        if (!inUnits && !error.empty()) {
          llvm::errs() << "pipec: error: '" << file << "': " << error << "\n";
          status = std::max(status, int(kExitUsage));
          continue;
        }
        if (inUnits) {
          std::vector<CostOverride> model = plan::toCostOverrides(inUnits->costs);
          runArgs.costs.insert(runArgs.costs.begin(), model.begin(), model.end());
          runArgs.checks.costs = runArgs.costs;
        }
      }
      std::string failure, name;
      auto compilation = compileAndCheck(file, runArgs, elab, status, failure, name);
      if (!compilation) {
        // A sweep names the settings that fail: a missing row would read as absent.
        if (table && !sim.sweep.empty())
          rows.push_back({name, setting, 0, 0, 0, 0, 0, 0, 0, failure});
        continue;
      }
      compilation->releaseCheckContext();
      const ScheduleIR &ir = *compilation->ir();
      const CheckReport &report = *compilation->report();
      CostModel costs = CostModel::build(ir, runArgs.costs);
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
                        peak, chunks, ir.copies, CostModel::stagesPerRank(ir), "",
                        !args.costs.empty() || !point.costs.empty() || !ir.costs.empty()});
        continue;
      }
      if (sim.json && inUnits)
        printSimJson(ir, report, result, llvm::outs(),
                     [&](llvm::json::OStream &j) { writeUnitsJson(*inUnits, j); });
      else if (sim.json)
        printSimJson(ir, report, result, llvm::outs());
      else if (inUnits) {
        printSimText(ir, report, result, llvm::outs());
        printUnitsSummary(units, *inUnits, llvm::outs());
      } else {
        llvm::outs() << costRule(ir);
        printSimText(ir, report, result, llvm::outs());
      }
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
