// How the model is trained: batch, sequence, precision, optimizer, ZeRO stage,
// recomputation and tensor parallelism. Read from JSON:
//   { "global_batch": 1024, "sequence_length": 4096, "micro_batch": 1,
//     "param_dtype": "bf16", "grad_dtype": "bf16", "activation_dtype": "bf16",
//     "optimizer": "adamw" | "sgd", "zero_stage": 0..3,
//     "recompute": "none" | "selective" | "full", "tensor_parallel": 1 }
// Only global_batch and sequence_length are required; the rest default as below.
#pragma once

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace pipec::plan {

enum class DType { BF16, FP16, FP32 };
enum class Optimizer { AdamW, Sgd };
enum class Recompute { None, Selective, Full };

inline double bytesOf(DType type) { return type == DType::FP32 ? 4 : 2; }
std::optional<DType> parseDType(llvm::StringRef text); // "bf16", "fp16", "fp32"

struct Training {
  int64_t globalBatch = 0;     // sequences per step, all data-parallel replicas together
  int64_t sequenceLength = 0;  // s
  int64_t microBatch = 1;      // b, sequences per micro-batch
  DType paramType = DType::BF16;
  DType gradType = DType::BF16;
  DType activationType = DType::BF16;
  Optimizer optimizer = Optimizer::AdamW;
  int zeroStage = 0;           // 0: none; 1: optimizer; 2: + gradients; 3: + parameters
  Recompute recompute = Recompute::None;
  int64_t tensorParallel = 1;  // t; sequence parallelism assumed when t > 1

  // Optimizer state bytes per parameter: AdamW keeps two fp32 moments (8) and,
  // when parameters are 16-bit, an fp32 master copy (4): 12 for bf16 training.
  // SGD keeps only the master copy (4 for 16-bit parameters, else 0).
  double optimizerBytesPerParam() const;
  // Micro-batches per data-parallel replica in one step: global / (dp x b); 0 if it does not divide.
  int64_t microbatchesPerReplica(int64_t dataParallel) const;
};

bool validateTraining(const Training &training, std::string &error);
std::optional<Training> parseTraining(llvm::StringRef text, llvm::StringRef name, std::string &error);
std::optional<Training> readTraining(llvm::StringRef path, std::string &error);

} // namespace pipec::plan
