#include "driver/PlanSetup.h"

#include "plan/EpOverlap.h"
#include "plan/GpuPresets.h"
#include "plan/JsonFields.h"
#include "plan/TpOverlap.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace pipec {

bool loadPlanInputs(const ModelArgs &args, plan::PlanInputs &inputs, std::string &error) {
  if (args.model.empty())
    return error = "--model is required (a Hugging Face config.json)", false;
  if (args.cluster.empty())
    return error = std::string("--cluster is required (a cluster JSON file, or ") + plan::gpuPresetNames() + ")", false;
  if (args.globalBatch < 1)
    return error = "--global-batch is required (sequences per step, at least 1)", false;
  if (args.seqLen < 1)
    return error = "--seq-len is required (tokens per sequence, at least 1)", false;
  std::string why;
  auto config = plan::readModelConfig(args.model, why);
  if (!config)
    return error = "--model: " + why, false;
  auto cluster = plan::readCluster(args.cluster, why);
  if (!cluster && !llvm::sys::fs::exists(args.cluster) && !plan::clusterPreset(args.cluster))
    return error = "--cluster: '" + args.cluster +
                   "' is neither a preset (" + plan::gpuPresetNames() + ") nor a file",
           false;
  if (!cluster)
    return error = "--cluster: " + why, false;
  if (args.gpus > 0)
    cluster->gpus = args.gpus;
  if (!plan::validateCluster(*cluster, why))
    return error = (args.gpus > 0 ? "--gpus: " : "--cluster: ") + why, false;
  plan::Training training;
  training.globalBatch = args.globalBatch;
  training.sequenceLength = args.seqLen;
  training.microBatch = args.microBatchSize;
  training.zeroStage = args.zero;
  training.tensorParallel = args.tensorParallel;
  training.recompute = args.recompute == "full"        ? plan::Recompute::Full
                       : args.recompute == "selective" ? plan::Recompute::Selective
                                                       : plan::Recompute::None;
  training.recomputeLayers = args.recomputeLayers;
  training.contextParallel = args.contextParallel;
  training.precision = plan::parsePrecision(args.precision).value_or(plan::Precision::BF16);
  training.attention = plan::parseAttentionKernel(args.attention).value_or(plan::AttentionKernel::Flash);
  if (args.gradFp32)
    training.gradType = plan::DType::FP32;
  training.tpCommOverlap = args.tpOverlap;
  if (args.tpOverlapCfgGiven) {
    if (args.tpOverlapCfg.empty())
      return error = "--tp-overlap-cfg: needs a file (a JSON object of Transformer Engine's overlap points)", false;
    std::optional<std::string> text = plan::readTextFile(args.tpOverlapCfg, why);
    if (!text)
      return error = "--tp-overlap-cfg: " + why, false;
    // Depth- and shape-checked as every JSON input is (JsonFields.h).
    std::optional<llvm::json::Object> json = plan::parseJsonObject(*text, args.tpOverlapCfg, why);
    if (!json)
      return error = "--tp-overlap-cfg: " + why, false;
    std::optional<plan::TpOverlapConfig> overlap =
        plan::parseTpOverlapConfig(llvm::json::Value(std::move(*json)), args.tpOverlapCfg, why);
    if (!overlap)
      return error = "--tp-overlap-cfg: " + why, false;
    std::string problem = plan::tpOverlapClusterProblem(*overlap, *cluster);
    if (!problem.empty())
      return error = "--tp-overlap-cfg: " + args.tpOverlapCfg + ": " + problem, false;
    training.tpOverlapConfig = *overlap;
  }
  training.epCommOverlap = args.epOverlap;
  training.firstStageLayers = args.firstStageLayers;
  training.lastStageLayers = args.lastStageLayers;
  training.pipelineLayout = args.pipelineLayout;
  training.mtpLayers = args.mtpLayers;
  if (!plan::validateTraining(training, why))
    return error = why, false;
  // A learned position table (GPT-2) has no row for tokens past its length.
  if (config->maxPositions > 0 && args.seqLen > config->maxPositions)
    llvm::errs() << "pipec: warning: --seq-len " << args.seqLen << " is past the "
                 << config->modelType << " model's " << config->maxPositions
                 << " learned positions (n_positions): tokens past " << config->maxPositions
                 << " have no position embedding; the numbers assume the table is extended\n";
  // --ep-overlap needs experts and, where ep is given, ep > 1 (plan searches
  // ep otherwise and refuses ep 1 per layout).
  if (args.epOverlap && !plan::epOverlapApplies(*config, training,
                                                args.expertParallel > 0 ? args.expertParallel : 2, error,
                                                "--ep-overlap"))
    return false;
  inputs.config = std::move(*config);
  inputs.model = plan::buildLayers(inputs.config, plan::trainedMtpModules(training, inputs.config.nextnPredictLayers));
  inputs.cluster = std::move(*cluster);
  inputs.training = training;
  if (args.expertParallel > 0)
    inputs.expertParallel = args.expertParallel;
  return true;
}

plan::SearchOptions planSearch(const ModelArgs &args, const plan::PlanInputs &inputs) {
  plan::SearchOptions search;
  if (!args.tpGiven) {
    int64_t node = std::max<int64_t>(1, inputs.cluster.gpusPerNode);
    for (int64_t t = 1; t <= std::min<int64_t>(8, node); t *= 2)
      if (node % t == 0 && inputs.cluster.gpus % t == 0 &&
          (inputs.config.numHeads <= 0 || inputs.config.numHeads % t == 0))
        search.tensorParallel.push_back(t);
  }
  // Context parallelism for long sequences: each of cp GPUs keeps at least
  // 4,096 tokens, in 2 cp chunks (causal load balancing).
  if (!args.cpGiven)
    for (int64_t cp = 1; cp <= 8; cp *= 2)
      if (cp == 1 || (inputs.training.sequenceLength % (2 * cp) == 0 &&
                      inputs.training.sequenceLength / cp >= 4096))
        search.contextParallel.push_back(cp);
  if (!args.microBatchGiven)
    for (int64_t b : {1, 2, 4})
      if (b <= inputs.training.globalBatch)
        search.microBatchSizes.push_back(b);
  if (!args.recomputeGiven)
    search.recompute = {plan::Recompute::None, plan::Recompute::Selective, plan::Recompute::Full};
  if (!args.zeroGiven)
    search.zeroStages = {0, 1, 2, 3};
  // No split given: each layout's end stages are sized to balance its stages.
  search.balanceStages = args.firstStageLayers < 0 && args.lastStageLayers < 0 && args.pipelineLayout.empty();
  return search;
}

namespace {

bool isDirectory(const std::string &path) { return llvm::sys::fs::is_directory(path); }

// The examples next to this executable: build/bin/pipec -> examples/ (a build
// tree inside the source tree), bin/pipec -> share/pipec/examples (installed).
std::string besideExecutable() {
  static int anchor;
  std::string exe = llvm::sys::fs::getMainExecutable("pipec", &anchor);
  if (exe.empty())
    return "";
  llvm::SmallString<256> bin(llvm::sys::path::parent_path(exe));
  for (const char *relative : {"../share/pipec/examples", "../../examples"}) {
    llvm::SmallString<256> candidate(bin);
    llvm::sys::path::append(candidate, relative);
    llvm::sys::path::remove_dots(candidate, true);
    if (isDirectory(std::string(candidate)))
      return std::string(candidate);
  }
  return "";
}

} // namespace

std::vector<std::string> libraryFiles(std::string &error) {
  std::string dir;
#ifdef PIPEC_EXAMPLES_DIR
  if (isDirectory(PIPEC_EXAMPLES_DIR))
    dir = PIPEC_EXAMPLES_DIR;
#endif
  if (dir.empty())
    dir = besideExecutable();
  std::vector<std::string> files;
  if (dir.empty()) {
    error = "cannot find the schedule library (examples/*.pipe) beside pipec; name the "
            "schedules to plan as arguments";
    return files;
  }
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".pipe")
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  if (files.empty())
    error = "the schedule library '" + dir + "' holds no .pipe files";
  return files;
}

} // namespace pipec
