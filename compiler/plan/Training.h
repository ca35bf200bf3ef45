// How the model is trained: batch, sequence, precision, optimizer, ZeRO stage,
// recomputation and tensor parallelism. Read from JSON:
//   { "global_batch": 1024, "sequence_length": 4096, "micro_batch": 1,
//     "param_dtype": "bf16", "grad_dtype": "bf16", "activation_dtype": "bf16",
//     "optimizer": "adamw" | "sgd", "optimizer_state_dtype": "fp32", "zero_stage": 0..3,
//     "recompute": "none" | "selective" | "full", "tensor_parallel": 1,
//     "context_parallel": 1, "sequence_parallel": true, "tp_comm_overlap": false,
//     "tp_comm_overlap_cfg": {"fc1_wgrad": {"method": "bulk", "num_sm": 4}, ...},
//     "overlap_grad_reduce": true, "ep_comm_overlap": false,
//     "precision": "bf16" | "fp8", "fp8_swiglu_cache": false,
//     "attention": "flash" | "eager", "ep_dispatch": "all_to_all" | "deduplicated",
//     "first_stage_layers": 3, "last_stage_layers": 2,
//     "pipeline_layout": "Et*3|t*4|t*4|t*3L" }
// Only global_batch and sequence_length are required; the rest default as below.
// fp32 gradient accumulation (Megatron's main_grad buffer) is grad_dtype fp32.
#pragma once

#include "plan/TpOverlap.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace pipec::plan {

enum class DType { BF16, FP16, FP32 };
enum class Optimizer { AdamW, Sgd };
enum class Recompute { None, Selective, Full };
// The matmuls' input precision: FP8 runs the linear layers' GEMMs on the FP8
// tensor cores (as DeepSeek-V3 and NVIDIA's Transformer Engine recipes do) and
// keeps attention, norms and communication in BF16.
enum class Precision { BF16, FP8 };
// Flash: FlashAttention (the default of every current framework): no s^2
// scores are stored. Eager: the softmax and its dropout are stored (s^2 terms).
enum class AttentionKernel { Flash, Eager };
// How the expert-parallel dispatch crosses nodes: a plain all-to-all of every
// copy (NCCL, Megatron's alltoall dispatcher), or deduplicated, one copy per
// destination node forwarded over NVLink (DeepSeek-V3 §3.2.2, DeepEP,
// Megatron's flex dispatcher with DeepEP or HybridEP). Group-limited routing
// deduplicates either way (DeepSeek-V3's design couples the two).
enum class EpDispatch { AllToAll, Deduplicated };

inline double bytesOf(DType type) { return type == DType::FP32 ? 4 : 2; }
std::optional<DType> parseDType(llvm::StringRef text); // "bf16", "fp16", "fp32"
std::optional<Precision> parsePrecision(llvm::StringRef text);             // "bf16", "fp8"
std::optional<AttentionKernel> parseAttentionKernel(llvm::StringRef text); // "flash", "eager"

struct Training {
  int64_t globalBatch = 0;     // sequences per step, all data-parallel replicas together
  int64_t sequenceLength = 0;  // s
  int64_t microBatch = 1;      // b, sequences per micro-batch
  DType paramType = DType::BF16;
  DType gradType = DType::BF16;
  DType activationType = DType::BF16;
  Optimizer optimizer = Optimizer::AdamW;
  // AdamW's two moments: fp32 (Megatron, PyTorch) or bf16 (DeepSeek-V3 §3.3.1,
  // "Low-Precision Optimizer States"). The fp32 master copy stays fp32.
  DType optimizerStateType = DType::FP32;
  int zeroStage = 0;           // 0: none; 1: optimizer; 2: + gradients; 3: + parameters
  Recompute recompute = Recompute::None;
  // With full recomputation, how many transformer layers of each stage (each
  // model chunk) replay their forward: Megatron's --recompute-method block
  // --recompute-num-layers N recomputes the first N layers of each chunk and
  // keeps the rest's activations. 0: every layer. Ignored otherwise.
  int64_t recomputeLayers = 0;
  // Whether the stage's `index`-th transformer layer (from 0) is recomputed
  // in full.
  bool recomputesLayerInFull(int64_t index) const {
    return recompute == Recompute::Full && (recomputeLayers == 0 || index < recomputeLayers);
  }
  int64_t tensorParallel = 1;  // t
  int64_t contextParallel = 1; // cp: the sequence split over cp GPUs (ring attention)
  bool sequenceParallel = true; // with t > 1: norms/dropouts sharded, TP all-gather/reduce-scatter
  bool tpCommOverlap = false;  // TP collectives hidden behind the matmuls (Megatron --tp-comm-overlap)
  // How Transformer Engine's userbuffers overlap them (`tp_comm_overlap_cfg`,
  // TE's format; TpOverlap.h): TE's defaults unless the training file gives
  // a recipe's.
  TpOverlapConfig tpOverlapConfig = defaultTpOverlap();
  // Data-parallel gradient reduce-scatter (all-reduce) overlapped with the
  // last backward, and the parameter all-gather with the first forward
  // (Megatron --overlap-grad-reduce --overlap-param-gather, FSDP's default).
  bool overlapGradReduce = true;
  // Megatron-Core's expert all-to-all overlap (--overlap-moe-expert-parallel-comm,
  // "EP A2A overlap"): in 1F1B's steady state one micro-batch's forward and
  // another's backward run as one merged step, each one's dispatch and combine
  // under the other's compute. The planner then runs the schedule's overlap
  // form from examples/ep_overlap/ (EpOverlap.h), whose steady-state F/B are
  // overlap pairs; it needs a MoE model with ep > 1 and a 1F1B-family schedule.
  bool epCommOverlap = false;
  // Why ep_comm_overlap and recompute full cannot go together (validateTraining
  // and epOverlapApplies both refuse with it).
  static constexpr const char *kEpOverlapFullRecompute =
      "cannot go with recompute full (Megatron-Core refuses full recomputation with "
      "overlap_moe_expert_parallel_comm)";
  Precision precision = Precision::BF16;
  // DeepSeek-V3's own FP8 framework (§3.3.3, "Low-Precision Storage"): the
  // SwiGLU inputs (fc1's gate and up outputs) are cached in FP8 for the
  // backward, with the SwiGLU output recomputed. Transformer Engine recipes
  // keep them in BF16 (the default).
  bool fp8SwigluCache = false;
  AttentionKernel attention = AttentionKernel::Flash;
  EpDispatch epDispatch = EpDispatch::AllToAll;
  // Uneven pipeline stages: transformer layers on the first and on the last
  // stage (the embedding and head come on top); -1: split evenly. The other
  // stages share the rest as evenly as possible.
  int64_t firstStageLayers = -1, lastStageLayers = -1;
  // Megatron-style layout (--pipeline-model-parallel-layout): stages split by
  // '|', each a sequence of E (embedding), t (transformer layer), L (loss/head),
  // with "x*n" repeating; overrides first/last_stage_layers. Empty: unused.
  std::string pipelineLayout;
  // Multi-token prediction modules trained with the model (Megatron's
  // mtp_num_layers); -1: as many as the model's config has
  // (num_nextn_predict_layers), as DeepSeek-V3 trained.
  int64_t mtpLayers = -1;

  // GPUs one pipeline rank of one data-parallel replica occupies: t x cp.
  int64_t modelParallelGpus() const { return tensorParallel * contextParallel; }

  // Optimizer state bytes per parameter: AdamW keeps two moments (fp32: 8,
  // bf16: 4) and, when parameters are 16-bit, an fp32 master copy (4): 12 for
  // bf16 training with fp32 moments.
  // SGD keeps only the master copy (4 for 16-bit parameters, else 0).
  double optimizerBytesPerParam() const;
  // Micro-batches per data-parallel replica in one step: global / (dp x b); 0 if it does not divide.
  int64_t microbatchesPerReplica(int64_t dataParallel) const;
};

bool validateTraining(const Training &training, std::string &error);
// The MTP modules a training runs with a model (Training::mtpLayers).
int64_t trainedMtpModules(const Training &training, int64_t configModules);
std::optional<Training> parseTraining(llvm::StringRef text, llvm::StringRef name, std::string &error);
std::optional<Training> readTraining(llvm::StringRef path, std::string &error);

} // namespace pipec::plan
