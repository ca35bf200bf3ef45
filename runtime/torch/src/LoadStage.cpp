// loadTorchStage: finds stage s's files in the exported directory and checks
// them against the run (stage count, stage, dtype, micro-batch shape) before
// any of them runs, so a mismatch is one clear message at start.
#include "pipert_torch/TorchStage.h"

#include <filesystem>
#include <stdexcept>

namespace pipert::torchstage {

namespace {

namespace fs = std::filesystem;

constexpr const char *kParts[] = {"attention", "dispatch", "mlp", "combine"};

std::string stageFile(const std::string &dir, int s, const char *part, const ModuleLoader &loader) {
  std::string name = "stage_" + std::to_string(s) + (part ? std::string(".") + part : "") + loader.extension();
  return (fs::path(dir) / name).string();
}

// "stages 0-1" of the exported files present, for messages.
std::string exportedStages(const std::string &dir, const ModuleLoader &loader) {
  int n = 0;
  while (fs::exists(stageFile(dir, n, nullptr, loader)) || fs::exists(stageFile(dir, n, kParts[0], loader)))
    ++n;
  return n == 0 ? "no stage files" : n == 1 ? "stage 0 only" : "stages 0-" + std::to_string(n - 1);
}

void checkModule(const ModuleInfo &info, const std::string &file, int s, int numStages, const char *part,
                 const char *dtype) {
  if (info.numStages != numStages)
    throw std::invalid_argument(file + " belongs to a model exported as " + std::to_string(info.numStages) +
                                " stages; this schedule has " + std::to_string(numStages) +
                                ": export one module per stage of the schedule");
  if (info.stageIndex != s)
    throw std::invalid_argument(file + " holds stage " + std::to_string(info.stageIndex) + ", not stage " +
                                std::to_string(s));
  if (info.part != (part ? part : "whole"))
    throw std::invalid_argument(file + " holds the part '" + info.part + "', expected '" +
                                (part ? part : "whole") + "'");
  if (info.dtype != dtype)
    throw std::invalid_argument(file + " was exported in " + info.dtype + " and this run is --dtype " +
                                (std::string(dtype) == "float64" ? "fp64" : "fp32") +
                                ": export with dtype=torch." + dtype + ", or run with --dtype " +
                                (info.dtype == "float64" ? "fp64" : "fp32"));
}

// The module's samples (its input shape without the batch dimension) must tile
// a micro-batch; a module with a sequence dimension ([batch, seq] token ids,
// [batch, seq, hidden] activations) must have been exported for --seq, or a
// micro-batch would be cut into other sequences than the data's.
void checkInputShape(const ModuleInfo &info, const std::string &file, int tokens, int sequenceLength) {
  if (info.inputShape.size() < 2 || info.inputShape[0] != -1 || info.inputWidth <= 0)
    throw std::invalid_argument(file + ": no input shape recorded for the stage's first module");
  int64_t rowsPerSample = 1;
  for (size_t i = 1; i < info.inputShape.size(); ++i)
    rowsPerSample *= info.inputShape[i];
  if (!info.tokenIds)
    rowsPerSample /= info.inputWidth;
  if (rowsPerSample <= 0 || tokens % rowsPerSample != 0)
    throw std::invalid_argument(file + ": the module takes samples of " + std::to_string(rowsPerSample) +
                                " tokens; a micro-batch of " + std::to_string(tokens) +
                                " tokens (--seq x --micro-batch-size) is not a whole number of them");
  size_t sequenceDims = info.inputShape.size() - 1 - (info.tokenIds ? 0 : 1);
  if (sequenceDims >= 1 && rowsPerSample != sequenceLength)
    throw std::invalid_argument(file + ": the module was exported for sequences of " +
                                std::to_string(rowsPerSample) + " tokens, and this run is --seq " +
                                std::to_string(sequenceLength) + ": run with --seq " +
                                std::to_string(rowsPerSample) + ", or export for " +
                                std::to_string(sequenceLength));
}

} // namespace

template <typename T>
std::unique_ptr<Stage<T>> loadTorchStage(const ModuleLoader &loader, const std::string &dir, int s,
                                         int numStages, int tokens, int sequenceLength, uint64_t seed) {
  if (!fs::is_directory(dir))
    throw std::invalid_argument("--model-path '" + dir + "' is not a directory of exported stages "
                                "(write one with runtime/torch/pipec_torch_export.py)");
  const char *dtype = sizeof(T) == sizeof(double) ? "float64" : "float32";
  std::vector<const char *> parts;
  if (fs::exists(stageFile(dir, s, nullptr, loader))) {
    parts = {nullptr};
  } else if (fs::exists(stageFile(dir, s, kParts[0], loader))) {
    parts.assign(std::begin(kParts), std::end(kParts));
  } else {
    throw std::invalid_argument("'" + dir + "' has no stage_" + std::to_string(s) + loader.extension() +
                                " (nor its parts stage_" + std::to_string(s) + ".attention" +
                                loader.extension() + ", ...): it holds " + exportedStages(dir, loader) +
                                " and this schedule has " + std::to_string(numStages) + " stages");
  }
  std::vector<std::unique_ptr<StageModule>> modules;
  for (const char *part : parts) {
    std::string file = stageFile(dir, s, part, loader);
    if (!fs::exists(file))
      throw std::invalid_argument("'" + dir + "' has stage_" + std::to_string(s) + ".attention" +
                                  loader.extension() + " but not " + fs::path(file).filename().string() +
                                  ": a stage in parts needs all four (attention, dispatch, mlp, combine)");
    if (!fs::is_regular_file(file)) // a FIFO or a device would block or never end
      throw std::invalid_argument(file + " is not a regular file");
    modules.push_back(loader.load(file));
    checkModule(modules.back()->info(), file, s, numStages, part, dtype);
  }
  checkInputShape(modules.front()->info(), stageFile(dir, s, parts.front(), loader), tokens, sequenceLength);
  if (modules.back()->info().outputWidth <= 0)
    throw std::invalid_argument(stageFile(dir, s, parts.back(), loader) + ": no output width recorded");
  return std::make_unique<TorchStage<T>>(std::move(modules), StageInit{seed, s});
}

template std::unique_ptr<Stage<float>> loadTorchStage<float>(const ModuleLoader &, const std::string &, int, int,
                                                             int, int, uint64_t);
template std::unique_ptr<Stage<double>> loadTorchStage<double>(const ModuleLoader &, const std::string &, int,
                                                               int, int, int, uint64_t);

} // namespace pipert::torchstage
