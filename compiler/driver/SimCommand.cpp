// `pipec sim`: simulates checked schedules under a cost model.
//  - one file: the numbers (text or JSON), optionally a timeline, an SVG and a trace;
//  - several files (--compare) and/or --sweep NAME=v1,v2: one table, one row each.
// Under real conditions (--jitter, --slow, --sensitivity, --topology; SimVariability.h)
// a run also reports the step time's distribution and the ranks it is sensitive to;
// a table gains mean/p50/p90/p99 columns, --rank-by orders it, and its --svg is
// the step-time distributions side by side.
#include "driver/Commands.h"
#include "driver/PlanSetup.h"
#include "driver/Reporting.h"
#include "driver/SimUnits.h"
#include "driver/SimVariability.h"

#include "diag/DiagnosticRenderer.h"

#include "plan/ClusterTopology.h"
#include "plan/EpOverlap.h"
#include "plan/PlanReport.h"
#include "plan/ScheduleCache.h"
#include "sim/SimOutputs.h"
#include "sim/SvgDistribution.h"
#include "sim/SvgSensitivity.h"

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
  std::optional<Distribution> stepTime; // under --jitter
  std::vector<double> samples;          // under --jitter: for the distribution plot
  std::optional<plan::Candidate> inUnits; // with --model: step time, memory, fits
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
// `conditions`: the sums are finite without --jitter/--slow, so say those overflow.
void reportNonFiniteResult(Compilation &compilation, const CommonArgs &args,
                           bool conditions = false) {
  DiagnosticEngine diags(compilation.sources());
  Diagnostic &report =
      diags.report(DiagKind::NonFiniteResult, "simulating '" + compilation.path() +
                                                  "' overflows a double: the costs are too "
                                                  "large for their sums to be finite");
  if (conditions)
    report.note("the sampled or slowed times overflow: lower the --jitter coefficient of "
                "variation or the --slow factors");
  else
    report.note("scale the costs down, e.g. to milliseconds instead of nanoseconds");
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

// One row per run; with --model also the step time in seconds, the memory per
// GPU and whether it fits (the makespan column is then in seconds too).
void printTable(const std::vector<Row> &rows, SimArgs::RankBy rankBy, const plan::PlanInputs *units,
                llvm::raw_ostream &out) {
  size_t nameWidth = 22;
  for (const Row &r : rows)
    nameWidth = std::max(nameWidth, r.schedule.size());
  std::string kRow = fmt::format("{{:<{}}} {{:<10}} {{:>10}} {{:>10}} {{:>9}} {{:>12}} {{:>10}} "
                                 "{{:>12}} {{:>7}} {{:>4}}",
                                 nameWidth);
  const char *kUnits = " {:>10} {:>10} {:>5}";
  const char *kStats = " {:>10} {:>10} {:>10} {:>10}";
  bool stats = std::any_of(rows.begin(), rows.end(), [](const Row &r) { return r.stepTime; });
  if (units)
    out << "with --model: makespan and bubble in seconds; step s adds the gradient reduction; "
           "memory in GB per GPU of " << formatGigabytes(units->cluster.memoryBytes) << "\n";
  else
    out << "costs per stage = rank share / v, v = stages per rank (given costs are per stage)\n";
  printGivenCostRule(rows, out);
  if (rankBy != SimArgs::RankBy::Order)
    out << "ranked by " << (rankBy == SimArgs::RankBy::P99 ? "p99" : stats ? "mean" : "makespan")
        << " step time, best first\n";
  out << fmt::format(fmt::runtime(kRow), "schedule", "setting", "makespan", "bubble", "bubble %",
                     "utilization", "peak act.", "params/rank", "copies", "v");
  if (units)
    out << fmt::format(kUnits, "step s", "memory GB", "fits");
  out << (stats ? fmt::format(kStats, "mean", "p50", "p90", "p99") : "") << "\n";
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
                         formatGigabytes(r.inUnits->memory.total), r.inUnits->fits ? "yes" : "no");
    else if (units)
      out << fmt::format(kUnits, "-", "-", "-");
    if (r.stepTime)
      out << fmt::format(kStats, formatNumber(r.stepTime->mean), formatNumber(r.stepTime->p50),
                         formatNumber(r.stepTime->p90), formatNumber(r.stepTime->p99));
    out << "\n";
  }
}

// --rank-by: best first by the chosen statistic (the makespan without jitter);
// failed settings last, each group in its original order.
void rankRows(std::vector<Row> &rows, SimArgs::RankBy rankBy) {
  if (rankBy == SimArgs::RankBy::Order)
    return;
  auto key = [&](const Row &r) {
    if (!r.stepTime)
      return r.makespan;
    return rankBy == SimArgs::RankBy::P99 ? r.stepTime->p99 : r.stepTime->mean;
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const Row &a, const Row &b) {
    if (a.failure.empty() != b.failure.empty())
      return a.failure.empty();
    return a.failure.empty() && key(a) < key(b);
  });
}

// The distribution plot of a table under --jitter: one column per row that ran.
int writeDistributionPlot(const std::vector<Row> &rows, const SimArgs &sim) {
  std::vector<DistributionColumn> columns;
  for (const Row &r : rows)
    if (r.stepTime)
      columns.push_back({r.setting == "-" ? r.schedule : r.schedule + " " + r.setting, r.samples,
                         *r.stepTime});
  std::string title = sim.jitter.describe() + ", " + std::to_string(sim.samples) +
                      " samples, seed " + std::to_string(sim.seed);
  bool drawn = true;
  if (!writeOutputFile(sim.svgPath, [&](llvm::raw_ostream &o) {
        drawn = writeDistributionSvg(columns, title, o);
      }))
    return kExitUsage;
  if (!drawn) {
    llvm::errs() << "pipec: error: cannot draw the step-time distributions: no schedule ran, or a "
                    "step time is not finite\n";
    return kExitUsage;
  }
  return kExitClean;
}

// One (file, sweep point) run: its arguments after the sweep and --model are applied.
struct RunSetup {
  ElabOptions elab;
  CommonArgs args;
  std::optional<plan::ParallelSizes> unitsSizes; // with --model: the layout the file runs
  std::optional<plan::Candidate> inUnits;        // with --model: costs in seconds and bytes
};

// Phase 1 of a run: the sweep point's defines and costs; with --model the file
// is parsed here (its P sets M) and the layout chosen. Null (status raised) when
// the file cannot be read or --model cannot lay it out.
std::unique_ptr<Compilation> prepareRun(const std::string &file, const SimArgs::SweepPoint &point,
                                        const SimArgs &sim, const CommonArgs &args,
                                        const plan::PlanInputs &units, RunSetup &run,
                                        int &status) {
  run.elab = args.elab;
  run.elab.defines.insert(run.elab.defines.end(), point.defines.begin(), point.defines.end());
  run.args = args;
  run.args.costs.insert(run.args.costs.end(), point.costs.begin(), point.costs.end());
  run.args.checks.costs = run.args.costs; // the memory check sees the swept cost too
  std::unique_ptr<Compilation> fresh = newCompilation(file, args);
  if (!sim.model.given())
    return fresh;
  if (!fresh->load() || !fresh->parse()) {
    status = std::max(status, finish(*fresh, args));
    return nullptr;
  }
  std::string error;
  run.unitsSizes = unitsLayout(*fresh, run.elab, units, error);
  if (!run.unitsSizes) {
    llvm::errs() << "pipec: error: '" << file << "': " << error << "\n";
    status = std::max(status, int(kExitUsage));
    return nullptr;
  }
  return fresh;
}

// Phase 2a, with --model: the compiled file's costs in seconds and bytes, below
// any --costs / --cost given. False (status raised) when they cannot be had.
bool costInUnits(const std::string &file, const plan::CompiledSchedule &prepared,
                 const plan::PlanInputs &units, RunSetup &run, int &status) {
  if (!run.unitsSizes)
    return true;
  std::string error;
  run.inUnits = unitsCandidate(prepared, *run.unitsSizes, units, error);
  if (!run.inUnits) {
    llvm::errs() << "pipec: error: '" << file << "': " << error << "\n";
    status = std::max(status, int(error.rfind("the costs in seconds", 0) == 0 ? kExitErrors
                                                                               : kExitUsage));
    return false;
  }
  std::vector<CostOverride> model = plan::toCostOverrides(run.inUnits->costs);
  run.args.costs.insert(run.args.costs.begin(), model.begin(), model.end());
  return true;
}

// --model under stragglers or contention: the summary in seconds follows the
// perturbed step (MFU, tokens/s and GPU-hours scale with it); the reduction is
// what the step takes after the pipeline (contended, under a topology).
void applyConditionsToUnits(plan::Candidate &c, const SimResult &result,
                            const VariabilityReport &variability) {
  double quietStep = c.stepTime;
  c.makespan = result.makespan;
  c.stepTime = variability.stepTime;
  c.tailSeconds = c.stepTime - c.makespan;
  size_t ranks = result.ranks.size();
  c.bubbleFraction = ranks && c.makespan > 0 ? result.totalBubble() / ranks / c.makespan : 0;
  double speed = c.stepTime > 0 ? quietStep / c.stepTime : 1;
  c.mfu *= speed;
  c.tokensPerSecond *= speed;
  c.gpuHoursPerMillionTokens /= speed;
}

// Before the runs: --model's inputs (costs in seconds and bytes, below any --costs /
// --cost given) and --topology's network. False after printing why.
bool loadInputs(const SimArgs &sim, plan::PlanInputs &units, std::optional<Topology> &topology) {
  std::string error;
  if (sim.model.given() && !loadPlanInputs(sim.model, units, error)) {
    llvm::errs() << "pipec: error: " << error << "\n";
    return false;
  }
  if (!sim.topology.empty() && !(topology = plan::readTopology(sim.topology, error))) {
    llvm::errs() << "pipec: error: --topology: " << error << "\n";
    return false;
  }
  return true;
}

// Phase 2b: stragglers, contention, jitter and sensitivity, when asked for
// (SimVariability.h); under --model the summary in seconds follows. False after
// printing why the settings do not fit the schedule.
bool underConditions(const std::string &file, const ScheduleIR &ir, const CheckReport &report,
                     const CostModel &costs, const SimArgs &sim,
                     const std::optional<Topology> &topology, RunSetup &run, SimResult &result,
                     VariabilityReport &variability) {
  if (!sim.perturbed() && !sim.sensitivity)
    return true;
  std::string error;
  double tail = run.inUnits ? run.inUnits->tailSeconds : 0;
  if (!analyseVariability(ir, report, costs, sim, topology, tail, result, variability, error)) {
    llvm::errs() << "pipec: error: '" << file << "': " << error << "\n";
    return false;
  }
  if (run.inUnits)
    applyConditionsToUnits(*run.inUnits, result, variability);
  return true;
}

// Phase 3, in a table: one row of numbers.
Row tableRow(const ScheduleIR &ir, const CheckReport &report, const SimResult &result,
             const std::string &setting, const RunSetup &run,
             const VariabilityReport &variability) {
  int64_t peak = 0, chunks = 0;
  for (const RankMemory &m : report.memory) {
    peak = std::max(peak, m.peakActivations);
    chunks = std::max(chunks, m.parameterChunks);
  }
  size_t ranks = result.ranks.size();
  Row row{ir.name, setting, result.makespan, ranks ? result.totalBubble() / ranks : 0,
          result.makespan > 0 && ranks ? result.totalBusy() / (result.makespan * ranks) : 1,
          peak, chunks, ir.copies, CostModel::stagesPerRank(ir), "", std::nullopt, {},
          run.inUnits};
  if (variability.jittered) {
    row.stepTime = variability.jittered->stepTime;
    row.samples = variability.jittered->stepTimes;
  }
  return row;
}

// Phase 3, for one schedule: the numbers, as text or JSON, in units when --model is given.
void printNumbers(const ScheduleIR &ir, const CheckReport &report, const SimResult &result,
                  const SimArgs &sim, const plan::PlanInputs &units, const RunSetup &run,
                  const VariabilityReport &variability) {
  bool varied = sim.perturbed() || sim.sensitivity;
  if (sim.json && (run.inUnits || varied))
    printSimJson(ir, report, result, llvm::outs(), [&](llvm::json::OStream &j) {
      if (varied)
        writeVariabilityJson(variability, j);
      if (run.inUnits)
        writeUnitsJson(*run.inUnits, j);
    });
  else if (sim.json)
    printSimJson(ir, report, result, llvm::outs());
  else if (run.inUnits) {
    printSimText(ir, report, result, llvm::outs());
    printUnitsSummary(units, *run.inUnits, llvm::outs());
  } else {
    llvm::outs() << costRule(ir);
    printSimText(ir, report, result, llvm::outs());
  }
  if (!sim.json && varied)
    printVariabilityText(variability, llvm::outs());
}

// Phase 4, for one schedule: the timeline, the SVG and the trace. Pictures draw
// times: refuse them, clearly, when one is not finite. Returns the status.
int drawPictures(const std::string &file, const ScheduleIR &ir, const CheckReport &report,
                 const SimResult &result, const SimArgs &sim, const RunSetup &run,
                 const VariabilityReport &variability) {
  bool drawing = sim.timeline || !sim.svgPath.empty() || !sim.tracePath.empty();
  std::string undrawable = drawing ? undrawableReason(result) : "";
  if (!undrawable.empty()) {
    llvm::errs() << "pipec: error: cannot draw the timeline, SVG or trace of '" << file
                 << "': " << undrawable << "\n";
    return kExitUsage;
  }
  int status = kExitClean;
  if (sim.timeline)
    printTimeline(ir, result, llvm::outs());
  RankShading shading;
  for (const RankSensitivity &r : variability.sensitivity)
    shading.growth.push_back(r.growth);
  shading.factor = variability.sensitivityFactor;
  SvgOptions svg;
  svg.unit = run.inUnits ? "s" : "";
  svg.shading = shading.growth.empty() ? nullptr : &shading;
  if (!sim.svgPath.empty() && !writeOutputFile(sim.svgPath, [&](llvm::raw_ostream &o) {
        writeSvg(ir, result, o, svg);
      }))
    status = kExitUsage;
  if (!sim.tracePath.empty() &&
      !writeOutputFile(sim.tracePath,
                       [&](llvm::raw_ostream &o) {
                         // In seconds with --model: real microseconds; else 1 unit = 1 ms.
                         writeChromeTrace(ir, report, result, o, run.inUnits ? 1e6 : 1000);
                       }))
    status = kExitUsage;
  return status;
}

} // namespace

int runSim(const std::vector<std::string> &files, const SimArgs &sim, const CommonArgs &args) {
  int status = kExitClean;
  bool table = files.size() > 1 || sim.compare || !sim.sweep.empty();
  std::vector<SimArgs::SweepPoint> sweep = sim.sweep;
  if (sweep.empty())
    sweep.push_back({"-", {}, {}}); // one run without a sweep value

  plan::PlanInputs units;
  std::optional<Topology> topology;
  if (!loadInputs(sim, units, topology))
    return kExitUsage;

  // --ep-overlap: each schedule runs as its Megatron EP-overlap form.
  std::vector<std::string> scheduleFiles = files;
  if (units.training.epCommOverlap)
    for (std::string &file : scheduleFiles) {
      std::string error;
      std::optional<std::string> form = plan::epOverlapSchedule(file, error);
      if (!form) {
        llvm::errs() << "pipec: error: '" << file << "': " << error << "\n";
        return kExitUsage;
      }
      file = *form;
    }

  std::vector<Row> rows;
  for (const std::string &file : scheduleFiles) {
    for (const SimArgs::SweepPoint &point : sweep) {
      // 1. The run's settings; with --model the file is parsed once (its P sets M).
      RunSetup run;
      std::unique_ptr<Compilation> fresh = prepareRun(file, point, sim, args, units, run, status);
      if (!fresh)
        continue;
      // 2. Compile and check once, cost in units (--model), simulate.
      std::string failure, name;
      auto compilation = compileAndCheck(std::move(fresh), sim.model.given(), run.args, run.elab,
                                         status, failure, name);
      if (!compilation) {
        // A sweep names the settings that fail: a missing row would read as absent.
        if (table && !sim.sweep.empty())
          rows.push_back({name, point.setting, 0, 0, 0, 0, 0, 0, 0, failure, std::nullopt, {},
                          std::nullopt});
        continue;
      }
      std::shared_ptr<plan::CompiledSchedule> prepared =
          plan::prepareCompiled(std::move(compilation), sim.model.given());
      if (!costInUnits(file, *prepared, units, run, status))
        continue;
      const ScheduleIR &ir = prepared->ir();
      const CheckReport &report = prepared->report();
      CostModel costs = CostModel::build(ir, run.args.costs);
      SimResult result;
      simulate(prepared->plan, costs, result);
      // Stragglers, contention and jitter, when asked for: `result` then has the first two.
      VariabilityReport variability;
      if (!underConditions(file, ir, report, costs, sim, topology, run, result, variability)) {
        status = std::max(status, int(kExitUsage));
        continue;
      }
      if (!std::isfinite(result.makespan) || !std::isfinite(result.totalBusy()) ||
          !std::isfinite(result.totalBubble()) || !isFinite(variability)) {
        reportNonFiniteResult(*prepared->compilation, args, std::isfinite(result.makespan) &&
                                                                std::isfinite(result.totalBusy()));
        status = std::max(status, int(kExitErrors));
        continue;
      }
      // 3. The numbers: a table row, or one schedule's report.
      if (table) {
        rows.push_back(tableRow(ir, report, result, point.setting, run, variability));
        rows.back().givenCosts = !args.costs.empty() || !point.costs.empty() || !ir.costs.empty();
        continue;
      }
      printNumbers(ir, report, result, sim, units, run, variability);
      // 4. The pictures and the trace.
      status = std::max(status, drawPictures(file, ir, report, result, sim, run, variability));
    }
  }
  if (table && !rows.empty()) {
    rankRows(rows, sim.rankBy);
    printTable(rows, sim.rankBy, sim.model.given() ? &units : nullptr, llvm::outs());
    if (!sim.svgPath.empty()) // with a table, only under --jitter (parseSimArgs)
      status = std::max(status, writeDistributionPlot(rows, sim));
  }
  return status;
}

} // namespace pipec
