// `pipec calibrate`: a cluster file from the user's own measurements, for
// `plan --cluster` and `sim --model --cluster`. Sources (any together):
//  --kineto FILE       PyTorch profiler traces: matmul and attention FLOP/s,
//                      collective bandwidths (plan/KinetoTrace.h);
//  --sweep FILE        the GPU sweep's results (runtime/cuda/calibrate:
//                      `pipec-calibrate-sweep -o FILE` on the GPUs);
//  --pipec-trace FILE  a pipec program's trace (`--trace`) of SCHEDULE.pipe run
//                      at the model and sizes given: the one factor on the
//                      cluster's compute efficiencies that reproduces it.
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
#include "support/NumberText.h"

#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

namespace pipec {

namespace {

int fail(const std::string &message, int status = kExitUsage) {
  llvm::errs() << "pipec: error: " << message << "\n";
  return status;
}

// The schedule compiled as `sim --model` compiles it, and the one factor on the
// cluster's compute efficiencies at which the model's F, B, I and W take as
// long as the trace's (the ops the trace timed, each stage's mean x samples).
int scaleFromProgramTrace(const CalibrateArgs &args, const plan::PlanInputs &inputs,
                          double &scale, llvm::raw_ostream &out) {
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
  // The model's time of the ops the trace timed, at the base cluster's compute
  // efficiencies x `scale`: it falls as the scale grows. Bisect for the scale
  // at which it equals the trace's.
  double measuredSeconds = plan::profiledSeconds(*measured, *measured);
  auto predictedSeconds = [&](double scale, std::string &why) -> std::optional<double> {
    plan::PlanInputs scaled = inputs;
    scaled.cluster = plan::scaleCompute(inputs.cluster, scale);
    std::optional<plan::Candidate> c = unitsCandidate(*compiled, *layout, scaled, why);
    if (!c)
      return std::nullopt;
    std::vector<plan::StageProfile> model(c->costs.stages.size());
    for (size_t s = 0; s < model.size(); ++s) {
      const plan::StageCost &cost = c->costs.stages[s];
      model[s] = {{cost.F, 1}, {cost.B, 1}, {cost.I, 1}, {cost.W, 1}};
    }
    return plan::profiledSeconds(model, *measured);
  };
  if (!(measuredSeconds > 0))
    return fail("--pipec-trace: the trace times no lone F, B, I or W op of the schedule's stages",
                kExitErrors);
  double low = 1e-3, high = plan::maxComputeScale(inputs.cluster);
  std::optional<double> fastest = predictedSeconds(high, error);
  std::optional<double> slowest = predictedSeconds(low, error);
  if (!fastest || !slowest)
    return fail("'" + args.schedule + "': " + error, kExitErrors);
  if (measuredSeconds < *fastest || measuredSeconds > *slowest)
    return fail(fmt::format("--pipec-trace: the trace's ops take {} s; the model gives {} to {} s "
                            "for any compute efficiency: the model, the sizes or the cluster do "
                            "not match the traced run",
                            formatNumber(measuredSeconds), formatNumber(*fastest),
                            formatNumber(*slowest)),
                kExitErrors);
  for (int i = 0; i < 100 && high - low > 1e-12 * high; ++i) {
    double mid = (low + high) / 2;
    std::optional<double> t = predictedSeconds(mid, error);
    if (!t)
      return fail("'" + args.schedule + "': " + error, kExitErrors);
    (*t > measuredSeconds ? low : high) = mid;
  }
  size_t ops = 0;
  for (const plan::StageProfile &p : *measured)
    ops += size_t(p.F.samples + p.B.samples + p.I.samples + p.W.samples);
  out << fmt::format("program trace: {} lone ops of '{}' ({}) over {} stages, {} s of them; the "
                     "model gave {} s per step before\n",
                     ops, ir.name, plan::describeLayout(predicted->layout), measured->size(),
                     formatNumber(measuredSeconds), formatNumber(predicted->stepTime));
  scale = (low + high) / 2;
  return kExitClean;
}

std::string describeLink(const std::optional<plan::LinkFit> &fit, double bandwidth) {
  if (!fit)
    return "none measured (kept " + formatSignificant(bandwidth / 1e9, 4) + " GB/s)";
  return fmt::format("{} samples: {} GB/s, {} us per step (fit error {})", fit->samples,
                     formatSignificant(fit->bandwidth / 1e9, 4),
                     formatSignificant(fit->latency * 1e6, 3), formatPercent(fit->meanError, 1));
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
    if (summary->unplaced > 0)
      out << fmt::format("{}: {} collectives across nodes without their group's ranks (no 'Process "
                         "Group Ranks', rank start or stride): counted one member a node, so a "
                         "group with several a node gives a NIC rate too high by that many\n",
                         path, summary->unplaced);
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
    auto compute = [&](const char *what, const plan::ComputeFit &fit, const char *field) {
      out << fmt::format("{}: {} timed, {} TFLOP/s, {} of peak", what, fit.samples,
                         formatSignificant(fit.efficiency * base->peakFlops / 1e12, 4),
                         formatPercent(fit.efficiency, 1));
      if (fit.samples && *field)
        out << fmt::format(" -> {} {}", field, formatNumber(fit.modelEfficiency));
      out << "\n";
    };
    compute("matmuls", c->matmul, "matmul_efficiency");
    compute("attention forwards", c->attentionForward, "attention_forward_efficiency");
    compute("attention backwards", c->attentionBackward, "attention_backward_efficiency");
    if (c->unfusedAttention.samples)
      compute("unfused attention (not applied)", c->unfusedAttention, "");
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
    if (!loadPlanInputs(modelArgs, inputs, error))
      return fail(error);
    inputs.cluster = calibrated; // what the other sources measured, then the trace
    double scale = 1;
    if (int status = scaleFromProgramTrace(args, inputs, scale, out))
      return status;
    calibrated = plan::scaleCompute(calibrated, scale);
    out << fmt::format("compute efficiencies x {}: matmul {} -> {}, attention forward {} -> {}, "
                       "backward {} -> {}, memory-bound {} -> {}\n",
                       formatNumber(scale), formatNumber(inputs.cluster.matmulEfficiency),
                       formatNumber(calibrated.matmulEfficiency),
                       formatNumber(inputs.cluster.attentionForwardEfficiency),
                       formatNumber(calibrated.attentionForwardEfficiency),
                       formatNumber(inputs.cluster.attentionBackwardEfficiency),
                       formatNumber(calibrated.attentionBackwardEfficiency),
                       formatNumber(inputs.cluster.memoryEfficiency),
                       formatNumber(calibrated.memoryEfficiency));
  }
  if (!plan::validateCluster(calibrated, error))
    return fail("the calibrated cluster is out of range: " + error, kExitErrors);
  if (!writeOutputFile(args.output, [&](llvm::raw_ostream &o) { o << plan::clusterJson(calibrated); }))
    return kExitUsage;
  llvm::outs() << out.str();
  return kExitClean;
}

} // namespace pipec
