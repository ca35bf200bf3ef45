// Predicts every published training run in runs.json with the planner's cost
// model and the simulator (the same path as `pipec plan`), prints each row's
// measured and predicted step time and the error, and fails when an error is
// above the stated thresholds.
//
//   plan_validation runs.json EXAMPLES_DIR [--max-row F] [--max-dense-mean F]
//                   [--max-moe-mean F] [--markdown] [--verbose] [--require-fit]
//
// --verbose adds where the busiest stage's time goes, the memory per GPU by
// term, and the activations of the rank that needs most (chunks in flight at
// its peak, the layers they hold, one layer's bytes).
//
// A configuration that does not fit is reported on its row and counted in the
// summary; with --require-fit it fails the run.
#include "plan/EpOverlap.h"
#include "plan/Planner.h"
#include "plan/ScheduleCache.h"
#include "plan/StageLayout.h"

#include "plan/JsonFields.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

using namespace pipec;
using namespace pipec::plan;

namespace {

std::string text(const llvm::json::Value &value) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << value;
  return os.str();
}

// The published step time in seconds, from whichever figure the source gives.
double measuredStep(const llvm::json::Object &measured, const PlanInputs &in, double gpus, std::string &how) {
  const Training &t = in.training;
  double tokens = double(t.globalBatch) * double(t.sequenceLength);
  if (auto x = measured.getNumber("tokens_per_second_per_gpu")) {
    how = llvm::formatv("{0} tokens/s/GPU", *x);
    return tokens / (*x * gpus);
  }
  if (auto x = measured.getNumber("gpu_hours_per_trillion_tokens")) {
    how = llvm::formatv("{0} GPU-h per 1e12 tokens", *x);
    return tokens * *x * 3600 / 1e12 / gpus;
  }
  double s = double(t.sequenceLength), h = double(in.config.hiddenSize);
  double l = double(in.config.numLayers), V = double(in.config.vocabSize);
  if (auto x = measured.getNumber("tflops_per_gpu")) {
    // Narayanan et al. 2021, §5.1: 96 B s l h^2 (1 + s / 6h + V / 16 l h)
    // FLOPs per iteration, activation recomputation included.
    double B = double(t.globalBatch);
    double flops = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    how = llvm::formatv("{0} TFLOP/s/GPU", *x);
    return flops / (*x * 1e12 * gpus);
  }
  if (auto x = measured.getNumber("mfu")) {
    // PaLM (Chowdhery et al. 2022, App. B): 6N + 12 L h s FLOPs per token.
    double perToken = 6 * in.model.totalParams + 12 * l * h * s;
    how = llvm::formatv("MFU {0:P0}", *x);
    return tokens * perToken / (*x * in.cluster.peakFlops * gpus);
  }
  return 0;
}

// --verbose: the activations of the rank that needs most, as the schedule's
// peak holds them: chunk micro-batches in flight, the transformer layers in
// them, and the largest layer's stored bytes a micro-batch as costed.
void printPeakActivations(const PlanInputs &in, const Candidate &c, const CompiledSchedule &compiled) {
  size_t rank = 0;
  for (size_t r = 0; r < c.costs.rankMemory.size(); ++r)
    if (c.costs.rankMemory[r].total > c.costs.rankMemory[rank].total)
      rank = r;
  std::string error;
  std::optional<std::vector<std::pair<size_t, size_t>>> ranges =
      stageLayerRanges(in.model, compiled.ir().numStages, c.training, error);
  if (!ranges || !compiled.activationPeaks || rank >= compiled.activationPeaks->size())
    return;
  const RankActivationPeaks &peaks = (*compiled.activationPeaks)[rank];
  std::vector<double> bytes;
  for (const StageCost &stage : c.costs.stages)
    bytes.push_back(stage.activationBytes);
  double best = -1, chunks = 0, layers = 0;
  for (const std::vector<double> &moment : peaks.moments) {
    double sum = 0, count = 0, held = 0;
    for (size_t i = 0; i < peaks.stages.size(); ++i) {
      size_t s = size_t(peaks.stages[i]);
      sum += moment[i] * bytes[s];
      count += moment[i];
      for (size_t l = (*ranges)[s].first; l < (*ranges)[s].second; ++l)
        held += moment[i] * (in.model.layers[l].kind == LayerKind::Dense || in.model.layers[l].kind == LayerKind::Moe);
    }
    if (sum > best)
      best = sum, chunks = count, layers = held;
  }
  double layer = 0;
  for (const LayerSpec &spec : in.model.layers)
    layer = std::max(layer, layerActivationBytes(in.config, spec.kind, c.training));
  llvm::outs() << llvm::formatv("    activations on rank {0}: {1:F0} chunk micro-batches in flight, {2:F0} layer "
                                "micro-batches, the largest layer {3:F3} GB a micro-batch\n",
                                rank, chunks, layers, layer / 1e9);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    llvm::errs() << "usage: plan_validation runs.json EXAMPLES_DIR [--max-row F] [--max-dense-mean F] "
                    "[--max-moe-mean F] [--markdown]\n";
    return 2;
  }
  double maxRow = 1e9, maxDense = 1e9, maxMoe = 1e9;
  bool markdown = false, verbose = false, requireFit = false;
  int notFitting = 0;
  for (int i = 3; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--markdown")
      markdown = true;
    else if (arg == "--verbose")
      verbose = true;
    else if (arg == "--require-fit")
      requireFit = true;
    else if (i + 1 < argc && arg == "--max-row")
      maxRow = std::atof(argv[++i]);
    else if (i + 1 < argc && arg == "--max-dense-mean")
      maxDense = std::atof(argv[++i]);
    else if (i + 1 < argc && arg == "--max-moe-mean")
      maxMoe = std::atof(argv[++i]);
    else {
      llvm::errs() << "plan_validation: unknown argument '" << arg << "'\n";
      return 2;
    }
  }
  std::string error;
  std::optional<std::string> file = readTextFile(argv[1], error);
  std::optional<llvm::json::Object> root = file ? parseJsonObject(*file, argv[1], error) : std::nullopt;
  const llvm::json::Array *runs = root ? root->getArray("runs") : nullptr;
  if (!runs) {
    llvm::errs() << "plan_validation: " << (error.empty() ? "no \"runs\" array" : error) << "\n";
    return 2;
  }
  std::string dir = llvm::sys::path::parent_path(argv[1]).str();
  std::string examples = argv[2];

  int failures = 0;
  double sumDense = 0, sumMoe = 0, worst = 0;
  int dense = 0, moe = 0;
  llvm::outs() << (markdown ? "| run | measured | measured step (s) | predicted step (s) | error | memory (GB) | fits |\n"
                              "| --- | --- | ---: | ---: | ---: | ---: | --- |\n"
                            : "");
  for (const llvm::json::Value &value : *runs) {
    const llvm::json::Object *row = value.getAsObject();
    std::string name = row ? row->getString("name").getValueOr("?").str() : "?";
    auto fail = [&](const std::string &why) {
      llvm::outs() << name << ": " << why << "\n";
      ++failures;
    };
    if (!row)
      continue;
    const llvm::json::Object *model = row->getObject("model");
    std::optional<ModelConfig> config;
    if (model && model->getString("file"))
      config = readModelConfig(dir + "/" + model->getString("file")->str(), error);
    else if (model && model->get("config"))
      config = parseModelConfig(text(*model->get("config")), name, error);
    if (!config) {
      fail("model: " + error);
      continue;
    }
    std::optional<Cluster> cluster =
        row->get("cluster") ? parseCluster(text(*row->get("cluster")), name, error) : std::nullopt;
    std::optional<Training> training =
        row->get("training") ? parseTraining(text(*row->get("training")), name, error) : std::nullopt;
    if (!cluster || !training) {
      fail(error);
      continue;
    }
    int64_t gpus = row->getInteger("gpus").getValueOr(0), pp = row->getInteger("pp").getValueOr(1);
    int64_t ep = row->getInteger("ep").getValueOr(1), v = row->getInteger("v").getValueOr(0);
    cluster->gpus = gpus;
    PlanInputs in;
    in.config = *config;
    in.model = buildLayers(*config, trainedMtpModules(*training, config->nextnPredictLayers));
    in.cluster = *cluster;
    in.training = *training;
    in.expertParallel = ep;
    int64_t mp = pp * training->modelParallelGpus();
    int64_t dp = mp > 0 ? gpus / mp : 0;
    int64_t M = dp > 0 ? training->microbatchesPerReplica(dp) : 0;
    if (dp < 1 || gpus % mp || M < 1) {
      fail("the GPUs or the batch do not split into the layout");
      continue;
    }
    std::string schedule = examples + "/" + row->getString("schedule").getValueOr("1f1b").str() + ".pipe";
    // Megatron's expert all-to-all overlap runs the schedule's overlap form.
    if (training->epCommOverlap) {
      std::optional<std::string> form = epOverlapSchedule(schedule, error);
      if (!form) {
        fail(error);
        continue;
      }
      schedule = *form;
    }
    ParallelSizes sizes{pp, dp, ep, M, v};
    sizes.tp = training->tensorParallel;
    sizes.cp = training->contextParallel;
    sizes.mbs = training->microBatch;
    ScheduleCache cache;
    std::shared_ptr<const CompiledSchedule> compiled =
        cache.get(schedule, pp, M, v, in.limits, error);
    std::optional<Candidate> c;
    if (compiled)
      c = evaluateCompiled(in, *compiled, schedule, sizes, in.training, error);
    if (!c) {
      fail("not evaluated: " + error);
      continue;
    }
    std::string how;
    const llvm::json::Object *measured = row->getObject("measured");
    double real = measured ? measuredStep(*measured, in, double(gpus), how) : 0;
    if (!(real > 0)) {
      fail("no measured figure");
      continue;
    }
    double err = c->stepTime / real - 1;
    bool isMoe = row->getString("kind").getValueOr("dense") == "moe";
    (isMoe ? sumMoe : sumDense) += std::fabs(err);
    ++(isMoe ? moe : dense);
    worst = std::max(worst, std::fabs(err));
    if (markdown)
      llvm::outs() << llvm::formatv("| {0} | {1} | {2:F2} | {3:F2} | {4:+0.0;-0.0}% | {5:F1} | {6} |\n", name, how, real,
                                    c->stepTime, 100 * err, c->memory.total / 1e9, c->fits ? "yes" : "no");
    else
      llvm::outs() << llvm::formatv("{0,-28} {1,-24} measured {2,8:F3} s  predicted {3,8:F3} s  error {4,6:F1}%  "
                                    "(bubble {5,4:F1}%, tail {6:F3} s, memory {7:F1} GB{8})\n",
                                    name, how, real, c->stepTime, 100 * err, 100 * c->bubbleFraction,
                                    c->tailSeconds, c->memory.total / 1e9, c->fits ? "" : ", DOES NOT FIT");
    if (verbose) {
      // Where the busiest stage's time goes, per micro-batch, forward + backward.
      const StageCost *busiest = &c->costs.stages[0];
      for (const StageCost &st : c->costs.stages)
        if (st.F + st.B > busiest->F + busiest->B)
          busiest = &st;
      const TimeParts &f = busiest->forwardTime, &b = busiest->backwardTime;
      llvm::outs() << llvm::formatv("    busiest stage F {0:F4} s + B {1:F4} s: compute {2:F4}, tp {3:F4}, cp {4:F4}, "
                                    "ep {5:F4}; p2p {6:F5}; M {7}; tail dp {8:F3} (unhidden {9:F3}) optimizer {10:F3}\n",
                                    busiest->F, busiest->B, f.compute + b.compute, f.tp + b.tp, f.cp + b.cp,
                                    f.ep + b.ep, busiest->messageSeconds, M, c->costs.tail.dataParallelSeconds,
                                    c->costs.tail.dataParallelUnhiddenSeconds, c->costs.tail.optimizerSeconds);
      const MemoryBreakdown &m = c->memory;
      llvm::outs() << llvm::formatv("    memory GB: params {0:F1} grads {1:F1} optimizer {2:F1} activations {3:F1} "
                                    "buffers {4:F1} runtime {5:F1}\n",
                                    m.params / 1e9, m.grads / 1e9, m.optimizer / 1e9, m.activations / 1e9,
                                    m.buffers / 1e9, m.runtime / 1e9);
      printPeakActivations(in, *c, *compiled);
    }
    if (!c->fits) {
      ++notFitting;
      if (requireFit)
        fail("the published configuration does not fit in memory");
    }
    if (std::fabs(err) > maxRow)
      fail(llvm::formatv("error {0:F1}% is above the {1:F0}% row threshold", 100 * err, 100 * maxRow));
  }
  double meanDense = dense ? sumDense / dense : 0, meanMoe = moe ? sumMoe / moe : 0;
  llvm::outs() << llvm::formatv("\n{0} dense runs: mean absolute error {1:F1}%; {2} MoE runs: {3:F1}%; "
                                "largest {4:F1}%; {5} of {6} published configurations do not fit\n",
                                dense, 100 * meanDense, moe, 100 * meanMoe, 100 * worst, notFitting, dense + moe);
  if (meanDense > maxDense) {
    llvm::outs() << llvm::formatv("dense mean {0:F1}% is above {1:F0}%\n", 100 * meanDense, 100 * maxDense);
    ++failures;
  }
  if (meanMoe > maxMoe) {
    llvm::outs() << llvm::formatv("MoE mean {0:F1}% is above {1:F0}%\n", 100 * meanMoe, 100 * maxMoe);
    ++failures;
  }
  return failures ? 1 : 0;
}
