// `pipec calibrate`: a cluster file from the user's own measurements, for
// `plan --cluster` and `sim --model --cluster`. Sources (any together):
//  --kineto FILE       PyTorch profiler traces: matmul and attention FLOP/s,
//                      collective bandwidths (plan/KinetoTrace.h);
//  --sweep FILE        the GPU sweep's results (runtime/cuda/calibrate:
//                      `pipec-calibrate-sweep -o FILE` on the GPUs);
//  --pipec-trace FILE  a pipec program's trace (`--trace`) of SCHEDULE.pipe run
//                      at the model and sizes given: the sustained fraction at
//                      which the model's F, B, I, W match the trace's.
// The base cluster (--cluster) gives the peak and every number not measured.
#include "driver/Commands.h"
#include "driver/PlanSetup.h"
#include "driver/Reporting.h"
#include "driver/SimUnits.h"

#include "frontend/Compilation.h"
#include "plan/Calibration.h"
#include "plan/JsonFields.h"
#include "plan/KinetoTrace.h"
#include "plan/PlanReport.h"
#include "plan/ScheduleCache.h"
#include "plan/TraceProfile.h"
#include "sim/SimOutputs.h"

#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

namespace pipec {

namespace {

int fail(const std::string &message, int status = kExitUsage) {
  llvm::errs() << "pipec: error: " << message << "\n";
  return status;
}

// The schedule compiled as `sim --model` compiles it, and the model's costs of
// each stage as a profile, with the trace's profile of the same stages.
int fractionFromProgramTrace(const CalibrateArgs &args, const plan::PlanInputs &inputs,
                             double &fraction, llvm::raw_ostream &out) {
  auto compilation = std::make_unique<Compilation>(args.schedule);
  compilation->diags().setErrorLimit(1);
  ElabOptions elab;
  elab.defines = args.defines;
  std::string error;
  if (!compilation->load() || !compilation->parse())
    return fail("--pipec-trace: cannot read the schedule '" + args.schedule + "'", kExitErrors);
  std::optional<plan::ParallelSizes> layout = unitsLayout(*compilation, elab, inputs, error);
  if (!layout)
    return fail("'" + args.schedule + "': " + error);
  if (!compilation->resolve() || !compilation->elaborate(elab) || !compilation->check({})) {
    std::string first = "the schedule was refused";
    for (const Diagnostic &d : compilation->diags().diagnostics())
      if (d.severity == Severity::Error) {
        first = d.message;
        break;
      }
    return fail("'" + args.schedule + "': " + first, kExitErrors);
  }
  std::shared_ptr<plan::CompiledSchedule> compiled = plan::prepareCompiled(std::move(compilation));
  std::optional<plan::Candidate> predicted = unitsCandidate(*compiled, *layout, inputs, error);
  if (!predicted)
    return fail("'" + args.schedule + "': " + error, kExitErrors);
  // Which stage each (rank, chunk) of the trace holds: the first flow's slots.
  const ScheduleIR &ir = compiled->ir();
  std::vector<std::vector<int64_t>> stageOf(size_t(ir.numRanks));
  if (!ir.flows.empty())
    for (size_t s = 0; s < ir.flows[0].stageSlots.size(); ++s) {
      const Slot &slot = ir.flows[0].stageSlots[s];
      std::vector<int64_t> &chunks = stageOf[size_t(slot.rank)];
      if (chunks.size() <= size_t(slot.chunk))
        chunks.resize(size_t(slot.chunk) + 1, -1);
      chunks[size_t(slot.chunk)] = int64_t(s);
    }
  std::optional<std::vector<plan::StageProfile>> measured =
      plan::readTraceProfile(args.programTrace, stageOf, error);
  if (!measured)
    return fail("--pipec-trace: " + error, kExitErrors);
  std::vector<plan::StageProfile> model(predicted->costs.stages.size());
  for (size_t s = 0; s < model.size(); ++s) {
    const plan::StageCost &c = predicted->costs.stages[s];
    model[s] = {{c.F, 1}, {c.B, 1}, {c.I, 1}, {c.W, 1}};
  }
  std::optional<double> f = plan::sustainedFractionFromProfile(
      *measured, model, inputs.cluster.sustainedFraction, error);
  if (!f)
    return fail("--pipec-trace: " + error, kExitErrors);
  size_t ops = 0;
  for (const plan::StageProfile &p : *measured)
    ops += size_t(p.F.samples + p.B.samples + p.I.samples + p.W.samples);
  out << fmt::format("program trace: {} lone ops of '{}' ({}) over {} stages; the model at "
                     "sustained fraction {} predicted {} s per step\n",
                     ops, ir.name, plan::describeLayout(predicted->layout), measured->size(),
                     formatNumber(inputs.cluster.sustainedFraction),
                     formatNumber(predicted->stepTime));
  fraction = *f;
  return kExitClean;
}

std::string describeLink(const std::optional<plan::LinkFit> &fit, double bandwidth) {
  if (!fit)
    return fmt::format("none measured (kept {:.4g} GB/s)", bandwidth / 1e9);
  return fmt::format("{} samples: {:.4g} GB/s, {:.3g} us per step (fit error {:.1f}%)",
                     fit->samples, fit->bandwidth / 1e9, fit->latency * 1e6, 100 * fit->meanError);
}

} // namespace

int runCalibrate(const CalibrateArgs &args, const ModelArgs &modelArgs) {
  if (args.kineto.empty() && args.sweep.empty() && args.programTrace.empty())
    return fail("calibrate needs measurements: --kineto FILE (a PyTorch profiler trace), "
                "--sweep FILE (pipec-calibrate-sweep's results) or --pipec-trace FILE with a "
                "schedule and --model");
  if (modelArgs.cluster.empty())
    return fail("--cluster is required (the base cluster: a preset or a file; its peak_flops "
                "is what efficiencies are measured against)");
  std::string error;
  std::optional<plan::Cluster> base = plan::readCluster(modelArgs.cluster, error);
  if (!base)
    return fail("--cluster: " + error);
  if (modelArgs.gpus > 0)
    base->gpus = modelArgs.gpus;
  if (!plan::validateCluster(*base, error))
    return fail("--cluster: " + error);
  std::string text;
  llvm::raw_string_ostream out(text);

  std::vector<plan::Measurement> measurements;
  for (const std::string &path : args.kineto) {
    std::optional<std::string> json = plan::readTextFile(path, error);
    if (!json)
      return fail("--kineto: " + error);
    std::optional<plan::KinetoSummary> summary =
        plan::readKinetoTrace(*json, path, base->gpusPerNode, error);
    if (!summary)
      return fail("--kineto: " + error, kExitErrors);
    out << fmt::format("{}: {} kernels, {} operators timed, {} without kernels or shapes\n", path,
                       summary->kernels, summary->measurements.size(), summary->skipped);
    measurements.insert(measurements.end(), summary->measurements.begin(),
                        summary->measurements.end());
  }
  if (!args.sweep.empty()) {
    std::optional<std::string> json = plan::readTextFile(args.sweep, error);
    if (!json)
      return fail("--sweep: " + error);
    auto sweep = plan::readSweepResults(*json, args.sweep, error);
    if (!sweep)
      return fail("--sweep: " + error, kExitErrors);
    out << fmt::format("{}: {} measurements\n", args.sweep, sweep->size());
    measurements.insert(measurements.end(), sweep->begin(), sweep->end());
  }

  plan::Cluster calibrated = *base;
  if (!args.kineto.empty() || !args.sweep.empty()) {
    std::optional<plan::Calibration> c = plan::calibrate(measurements, *base, error);
    if (!c)
      return fail(error, kExitErrors);
    calibrated = plan::applyCalibration(*base, *c);
    out << fmt::format("matmuls: {} timed, {:.4g} TFLOP/s, {:.1f}% of peak\n", c->matmulSamples,
                       c->matmulEfficiency * base->peakFlops / 1e12, 100 * c->matmulEfficiency);
    out << fmt::format("attention: {} timed, {:.4g} TFLOP/s, {:.1f}% of peak\n",
                       c->attentionSamples, c->attentionEfficiency * base->peakFlops / 1e12,
                       100 * c->attentionEfficiency);
    out << "intra-node collectives: " << describeLink(c->intraNode, base->intraNodeBandwidth)
        << "\n";
    out << "inter-node collectives: " << describeLink(c->interNode, base->interNodeBandwidth)
        << "\n";
  }
  if (!args.programTrace.empty()) {
    if (!modelArgs.given() || args.schedule.empty())
      return fail("--pipec-trace needs the schedule it ran (a .pipe file) and --model, "
                  "--global-batch and --seq-len of the run");
    plan::PlanInputs inputs;
    ModelArgs withBase = modelArgs;
    if (!loadPlanInputs(withBase, inputs, error))
      return fail(error);
    inputs.cluster = calibrated; // what the other sources measured, then the trace
    double fraction = 0;
    if (int status = fractionFromProgramTrace(args, inputs, fraction, out))
      return status;
    calibrated.sustainedFraction = fraction;
  }
  if (!plan::validateCluster(calibrated, error))
    return fail("the calibrated cluster is out of range: " + error, kExitErrors);
  out << fmt::format("sustained_fraction {} -> {}\n", formatNumber(base->sustainedFraction),
                     formatNumber(calibrated.sustainedFraction));
  if (!writeOutputFile(args.output, [&](llvm::raw_ostream &o) { o << plan::clusterJson(calibrated); }))
    return kExitUsage;
  llvm::outs() << out.str();
  return kExitClean;
}

} // namespace pipec
