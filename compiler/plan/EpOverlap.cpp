// Megatron-Core's expert all-to-all overlap: the schedule file that runs it
// and the refusals where it cannot apply (EpOverlap.h).
#include "plan/EpOverlap.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace pipec::plan {

namespace {
constexpr const char *kFolder = "ep_overlap";
} // namespace

std::optional<std::string> epOverlapSchedule(const std::string &file, std::string &error) {
  llvm::StringRef dir = llvm::sys::path::parent_path(file);
  if (llvm::sys::path::filename(dir) == kFolder)
    return file;
  llvm::SmallString<256> form(dir);
  llvm::sys::path::append(form, kFolder, llvm::sys::path::filename(file));
  if (llvm::sys::fs::exists(form))
    return std::string(form);
  error = "ep_comm_overlap: the schedule '" + llvm::sys::path::filename(file).str() +
          "' has no expert all-to-all overlap form (Megatron-Core merges a forward and a backward "
          "only in the steady state of 1F1B with one pipeline rank and of interleaved 1F1B; the "
          "forms are in " + std::string(kFolder) + "/ beside the library)";
  return std::nullopt;
}

bool epOverlapApplies(const ModelConfig &config, const Training &training, int64_t ep,
                      std::string &error, llvm::StringRef name) {
  auto refuse = [&](const std::string &problem) {
    error = name.str() + ": " + problem;
    return false;
  };
  if (training.recompute == Recompute::Full)
    return refuse(Training::kEpOverlapFullRecompute);
  if (!config.isMoe())
    return refuse("the model (" + config.modelType + ") has no experts, so there is no expert all-to-all to overlap");
  if (ep < 2)
    return refuse("needs expert parallelism (ep > 1; Megatron-Core asserts expert_model_parallel_size > 1): "
                  "with ep 1 there is no all-to-all to overlap");
  return true;
}

} // namespace pipec::plan
