#include "plan/Training.h"

#include "plan/JsonFields.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>

namespace pipec::plan {

namespace {

constexpr int64_t kMaxBatch = int64_t(1) << 30;
constexpr int64_t kMaxSequence = int64_t(1) << 24;
constexpr int64_t kMaxTensorParallel = 1 << 16;
constexpr int64_t kMaxMtpLayers = 64; // as num_nextn_predict_layers (ModelConfig.cpp)

} // namespace

std::optional<DType> parseDType(llvm::StringRef text) {
  return llvm::StringSwitch<std::optional<DType>>(text)
      .Case("bf16", DType::BF16)
      .Case("fp16", DType::FP16)
      .Case("fp32", DType::FP32)
      .Default(std::nullopt);
}

std::optional<Precision> parsePrecision(llvm::StringRef text) {
  return llvm::StringSwitch<std::optional<Precision>>(text)
      .Case("bf16", Precision::BF16)
      .Case("fp8", Precision::FP8)
      .Default(std::nullopt);
}

std::optional<AttentionKernel> parseAttentionKernel(llvm::StringRef text) {
  return llvm::StringSwitch<std::optional<AttentionKernel>>(text)
      .Case("flash", AttentionKernel::Flash)
      .Case("eager", AttentionKernel::Eager)
      .Default(std::nullopt);
}

double Training::optimizerBytesPerParam() const {
  double master = paramType == DType::FP32 ? 0 : 4;
  return optimizer == Optimizer::AdamW ? master + 2 * bytesOf(optimizerStateType) : master;
}

int64_t Training::microbatchesPerReplica(int64_t dataParallel) const {
  if (dataParallel < 1 || microBatch < 1 || globalBatch % (dataParallel * microBatch) != 0)
    return 0;
  return globalBatch / (dataParallel * microBatch);
}

bool validateTraining(const Training &t, std::string &error) {
  auto bad = [&](const char *field, const std::string &problem) {
    error = "training: field '" + std::string(field) + "' " + problem;
    return false;
  };
  if (t.globalBatch < 1 || t.globalBatch > kMaxBatch)
    return bad("global_batch", "must be 1 to " + std::to_string(kMaxBatch));
  if (t.sequenceLength < 1 || t.sequenceLength > kMaxSequence)
    return bad("sequence_length", "must be 1 to " + std::to_string(kMaxSequence));
  if (t.microBatch < 1 || t.microBatch > t.globalBatch)
    return bad("micro_batch", "must be 1 to global_batch (" + std::to_string(t.globalBatch) + ")");
  if (t.zeroStage < 0 || t.zeroStage > 3)
    return bad("zero_stage", "must be 0, 1, 2 or 3");
  if (t.tensorParallel < 1 || t.tensorParallel > kMaxTensorParallel)
    return bad("tensor_parallel", "must be 1 to " + std::to_string(kMaxTensorParallel));
  if (t.contextParallel < 1 || t.contextParallel > kMaxTensorParallel)
    return bad("context_parallel", "must be 1 to " + std::to_string(kMaxTensorParallel));
  if (t.sequenceLength % (t.contextParallel * (t.contextParallel > 1 ? 2 : 1)) != 0)
    return bad("context_parallel", "is " + std::to_string(t.contextParallel) + "; the sequence length " +
                                       std::to_string(t.sequenceLength) +
                                       " must split into 2 x cp equal chunks (load-balanced causal ring attention)");
  // Sequence parallelism gives each tensor-parallel rank an equal share of
  // a sequence's tokens (Megatron refuses a sequence length tp does not
  // divide when sequence_parallel is set).
  if (t.sequenceParallel && t.tensorParallel > 1 && (t.sequenceLength / t.contextParallel) % t.tensorParallel != 0)
    return bad("tensor_parallel", "is " + std::to_string(t.tensorParallel) + "; sequence parallelism splits a sequence's " +
                                      std::to_string(t.sequenceLength / t.contextParallel) +
                                      " tokens (per context-parallel rank) evenly over the tensor-parallel ranks");
  if (t.recomputeLayers < 0 || t.recomputeLayers > kMaxSequence)
    return bad("recompute_num_layers", "must be 0 (every layer) or more");
  if (t.recomputeLayers > 0 && t.recompute != Recompute::Full)
    return bad("recompute_num_layers", "needs recompute full (Megatron's block method recomputes whole layers)");
  // Megatron refuses the overlap with full recomputation
  // (transformer_config.py: "disable full recomputation when enabling
  // overlap_moe_expert_parallel_comm"; recompute_method and
  // recompute_num_layers must be unset).
  if (t.epCommOverlap && t.recompute == Recompute::Full)
    return bad("ep_comm_overlap", Training::kEpOverlapFullRecompute);
  if (t.fp8SwigluCache && t.precision != Precision::FP8)
    return bad("fp8_swiglu_cache", "needs precision fp8");
  if (t.firstStageLayers < -1 || t.firstStageLayers > kMaxSequence)
    return bad("first_stage_layers", "must be 0 or more (-1: an even split)");
  if (t.lastStageLayers < -1 || t.lastStageLayers > kMaxSequence)
    return bad("last_stage_layers", "must be 0 or more (-1: an even split)");
  if (t.mtpLayers < -1 || t.mtpLayers > kMaxMtpLayers)
    return bad("mtp_layers", "must be 0 to " + std::to_string(kMaxMtpLayers) + " (-1: as the model's config says)");
  return true;
}

int64_t trainedMtpModules(const Training &training, int64_t configModules) {
  return training.mtpLayers >= 0 ? training.mtpLayers : std::max<int64_t>(0, configModules);
}

std::optional<Training> parseTraining(llvm::StringRef text, llvm::StringRef name,
                                      std::string &error) {
  std::optional<llvm::json::Object> object = parseJsonObject(text, name, error);
  if (!object)
    return std::nullopt;
  JsonFields f(*object, name, error);
  Training t;
  t.globalBatch = f.integer("global_batch", 1, kMaxBatch);
  t.sequenceLength = f.integer("sequence_length", 1, kMaxSequence);
  t.microBatch = f.integer("micro_batch", 1, t.globalBatch, 1);
  auto dtype = [&](const char *key, const char *fallback = "bf16") {
    std::string text = f.string(key, std::string(fallback));
    std::optional<DType> type = parseDType(text);
    if (!type)
      f.fail(key, "is '" + text + "'; expected bf16, fp16 or fp32");
    return type.value_or(DType::BF16);
  };
  t.paramType = dtype("param_dtype");
  t.gradType = dtype("grad_dtype");
  t.activationType = dtype("activation_dtype");
  t.optimizerStateType = dtype("optimizer_state_dtype", "fp32");
  std::string optimizer = f.string("optimizer", "adamw");
  if (optimizer == "adamw")
    t.optimizer = Optimizer::AdamW;
  else if (optimizer == "sgd")
    t.optimizer = Optimizer::Sgd;
  else
    f.fail("optimizer", "is '" + optimizer + "'; expected adamw or sgd");
  t.zeroStage = int(f.integer("zero_stage", 0, 3, 0));
  std::string recompute = f.string("recompute", "none");
  if (recompute == "none")
    t.recompute = Recompute::None;
  else if (recompute == "selective")
    t.recompute = Recompute::Selective;
  else if (recompute == "full")
    t.recompute = Recompute::Full;
  else
    f.fail("recompute", "is '" + recompute + "'; expected none, selective or full");
  t.recomputeLayers = f.integer("recompute_num_layers", 0, kMaxSequence, 0);
  t.tensorParallel = f.integer("tensor_parallel", 1, kMaxTensorParallel, 1);
  t.contextParallel = f.integer("context_parallel", 1, kMaxTensorParallel, 1);
  t.sequenceParallel = f.boolean("sequence_parallel", true);
  t.tpCommOverlap = f.boolean("tp_comm_overlap", false);
  if (f.ok() && f.has("tp_comm_overlap_cfg")) {
    std::optional<TpOverlapConfig> overlap = parseTpOverlapConfig(*object->get("tp_comm_overlap_cfg"), name, error);
    if (!overlap)
      return std::nullopt;
    t.tpOverlapConfig = *overlap;
  }
  t.overlapGradReduce = f.boolean("overlap_grad_reduce", true);
  t.epCommOverlap = f.boolean("ep_comm_overlap", false);
  std::string precision = f.string("precision", "bf16");
  if (std::optional<Precision> p = parsePrecision(precision))
    t.precision = *p;
  else
    f.fail("precision", "is '" + precision + "'; expected bf16 or fp8");
  t.fp8SwigluCache = f.boolean("fp8_swiglu_cache", false);
  std::string attention = f.string("attention", "flash");
  if (std::optional<AttentionKernel> a = parseAttentionKernel(attention))
    t.attention = *a;
  else
    f.fail("attention", "is '" + attention + "'; expected flash or eager");
  std::string dispatch = f.string("ep_dispatch", "all_to_all");
  if (dispatch == "all_to_all")
    t.epDispatch = EpDispatch::AllToAll;
  else if (dispatch == "deduplicated")
    t.epDispatch = EpDispatch::Deduplicated;
  else
    f.fail("ep_dispatch", "is '" + dispatch + "'; expected all_to_all or deduplicated");
  t.firstStageLayers = f.integer("first_stage_layers", 0, kMaxSequence, -1);
  t.lastStageLayers = f.integer("last_stage_layers", 0, kMaxSequence, -1);
  t.pipelineLayout = f.string("pipeline_layout", "");
  t.mtpLayers = f.integer("mtp_layers", 0, kMaxMtpLayers, -1);
  static const char *kKnown[] = {"global_batch", "sequence_length", "micro_batch", "param_dtype",
                                 "grad_dtype", "activation_dtype", "optimizer_state_dtype", "optimizer", "zero_stage",
                                 "recompute", "recompute_num_layers", "tensor_parallel", "context_parallel",
                                 "sequence_parallel", "tp_comm_overlap", "tp_comm_overlap_cfg", "overlap_grad_reduce", "ep_comm_overlap", "precision", "fp8_swiglu_cache", "attention", "ep_dispatch",
                                 "first_stage_layers", "last_stage_layers", "pipeline_layout", "mtp_layers"};
  for (const auto &entry : *object)
    if (!llvm::is_contained(kKnown, entry.first.str()))
      f.fail(entry.first.str(), "is not a training field");
  if (!f.ok() || !validateTraining(t, error))
    return std::nullopt;
  return t;
}

std::optional<Training> readTraining(llvm::StringRef path, std::string &error) {
  std::optional<std::string> text = readTextFile(path, error);
  if (!text)
    return std::nullopt;
  return parseTraining(*text, path, error);
}

} // namespace pipec::plan
