// `pipec sim`: simulates checked schedules under a cost model.
//  - one file: the numbers (text or JSON), optionally a timeline, an SVG and a trace;
//  - several files (--compare) and/or --sweep NAME=v1,v2: one table, one row each.
#include "driver/Commands.h"
#include "driver/PlanSetup.h"
#include "driver/Reporting.h"
#include "driver/SimUnits.h"

#include "diag/DiagnosticRenderer.h"

#include "plan/PlanReport.h"
#include "plan/ScheduleCache.h"
#include "sim/SimOutputs.h"

#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

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
  std::optional<plan::Candidate> inUnits; // with --model: step time, memory, fits
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

// Compiles and checks one file (already parsed when `parsed`); prints
// diagnostics. Null on failure, with `failure` saying why.
std::unique_ptr<Compilation> compileAndCheck(std::unique_ptr<Compilation> compilation,
                                             bool parsed, const CommonArgs &args,
                                             const ElabOptions &elab, int &status,
                                             std::string &failure, std::string &name) {
  bool ok = parsed ? compilation->resolve() && compilation->elaborate(elab) &&
                         compilation->check(args.checks)
                   : compilation->runAll(elab, args.checks);
  status = std::max(status, finish(*compilation, args));
  if (!ok) {
    failure = failureCell(compilation->diags());
    name = compilation->ast() ? compilation->ast()->name : compilation->path();
  }
  return ok ? std::move(compilation) : nullptr;
}

std::unique_ptr<Compilation> newCompilation(const std::string &file, const CommonArgs &args) {
  auto compilation = std::make_unique<Compilation>(file);
  compilation->diags().setErrorLimit(args.errorLimit);
  compilation->diags().setWarningPolicy(args.warnings);
  return compilation;
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

// One row per run; with --model also the step time in seconds, the memory per
// GPU and whether it fits (the makespan column is then in seconds too).
void printTable(const std::vector<Row> &rows, const plan::PlanInputs *units,
                llvm::raw_ostream &out) {
  size_t nameWidth = 22;
  for (const Row &r : rows)
    nameWidth = std::max(nameWidth, r.schedule.size());
  std::string kRow = fmt::format("{{:<{}}} {{:<10}} {{:>10}} {{:>10}} {{:>9}} {{:>12}} {{:>10}} "
                                 "{{:>12}} {{:>7}} {{:>4}}",
                                 nameWidth);
  const char *kUnits = " {:>10} {:>10} {:>5}";
  if (units)
    out << "with --model: makespan and bubble in seconds; step s adds the gradient reduction; "
           "memory in GB per GPU of " << plan::formatGB(units->cluster.memoryBytes) << "\n";
  else
    out << "costs per stage = rank share / v, v = stages per rank (given costs are per stage)\n";
  out << fmt::format(fmt::runtime(kRow), "schedule", "setting", "makespan", "bubble", "bubble %",
                     "utilization", "peak act.", "params/rank", "copies", "v");
  if (units)
    out << fmt::format(kUnits, "step s", "memory GB", "fits");
  out << "\n";
  for (const Row &r : rows) {
    if (!r.failure.empty()) {
      out << fmt::format(fmt::runtime(fmt::format("{{:<{}}} {{:<10}} {{}}\n", nameWidth)),
                         r.schedule, r.setting, r.failure);
      continue;
    }
    out << fmt::format(fmt::runtime(kRow), r.schedule, r.setting, formatNumber(r.makespan),
                       formatNumber(r.meanBubble),
                       formatNumber(r.makespan > 0 ? 100 * r.meanBubble / r.makespan : 0) + "%",
                       formatNumber(100 * r.utilization) + "%", r.peakActivations,
                       r.parameterChunks, r.copies, formatNumber(r.stagesPerRank));
    if (units && r.inUnits)
      out << fmt::format(kUnits, formatNumber(r.inUnits->stepTime),
                         plan::formatGB(r.inUnits->memory.total), r.inUnits->fits ? "yes" : "no");
    else if (units)
      out << fmt::format(kUnits, "-", "-", "-");
    out << "\n";
  }
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
      // With --model the file is parsed once (its P sets M) and compiled once.
      std::unique_ptr<Compilation> fresh = newCompilation(file, args);
      std::optional<plan::ParallelSizes> unitsSizes;
      if (sim.model.given()) {
        if (!fresh->load() || !fresh->parse()) {
          status = std::max(status, finish(*fresh, args));
          continue;
        }
        std::string error;
        unitsSizes = unitsLayout(*fresh, elab, units, error);
        if (!unitsSizes) {
          llvm::errs() << "pipec: error: '" << file << "': " << error << "\n";
          status = std::max(status, int(kExitUsage));
          continue;
        }
      }
      std::string failure, name;
      auto compilation = compileAndCheck(std::move(fresh), sim.model.given(), runArgs, elab,
                                         status, failure, name);
      if (!compilation) {
        // A sweep names the settings that fail: a missing row would read as absent.
        if (table && !sim.sweep.empty())
          rows.push_back({name, setting, 0, 0, 0, 0, 0, 0, 0, failure, std::nullopt});
        continue;
      }
      // The one compilation, ready to be costed and simulated.
      std::shared_ptr<plan::CompiledSchedule> prepared =
          plan::prepareCompiled(std::move(compilation));
      const Compilation *compiled = prepared->compilation.get();
      std::optional<plan::Candidate> inUnits;
      if (unitsSizes) {
        std::string error;
        inUnits = unitsCandidate(*prepared, *unitsSizes, units, error);
        if (!inUnits) {
          llvm::errs() << "pipec: error: '" << file << "': " << error << "\n";
          status = std::max(status, int(error.rfind("the costs in seconds", 0) == 0 ? kExitErrors
                                                                                     : kExitUsage));
          continue;
        }
        // The model's costs, below any --costs / --cost given.
        std::vector<CostOverride> model = plan::toCostOverrides(inUnits->costs);
        runArgs.costs.insert(runArgs.costs.begin(), model.begin(), model.end());
      }
      const ScheduleIR &ir = *compiled->ir();
      const CheckReport &report = *compiled->report();
      CostModel costs = CostModel::build(ir, runArgs.costs);
      SimResult result;
      simulate(prepared->plan, costs, result);
      if (!std::isfinite(result.makespan) || !std::isfinite(result.totalBusy()) ||
          !std::isfinite(result.totalBubble())) {
        reportNonFiniteResult(*prepared->compilation, args);
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
                        peak, chunks, ir.copies, CostModel::stagesPerRank(ir), "", inUnits});
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
                     [&](llvm::raw_ostream &o) {
                             // In seconds with --model: real microseconds; else 1 unit = 1 ms.
                             writeChromeTrace(ir, report, result, o, inUnits ? 1e6 : 1000);
                           }))
        status = std::max(status, int(kExitUsage));
    }
  }
  if (table && !rows.empty())
    printTable(rows, sim.model.given() ? &units : nullptr, llvm::outs());
  return status;
}

} // namespace pipec
