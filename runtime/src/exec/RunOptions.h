// The command line of an emitted program.
#pragma once

#include "pipert/Loss.h"
#include "pipert/Optimizer.h"

#include <cstdint>
#include <string>

namespace pipert {

struct RunOptions {
  int steps = 1;
  int hidden = 16;        // h (defaults: pipert/SharedOptions.h)
  int seq = 8;            // tokens per sequence
  int microBatchSize = 1; // sequences per micro-batch: tokens = seq * microBatchSize
  bool moe = false;       // --model mlp|moe|empty
  bool empty = false;     // --model empty: ops do no work (measures the runtime's own cost)
  std::string provider;   // --model NAME: a registered stage provider (StageRegistry.h)
  std::string providerPath; // --model-path
  int ep = 1;             // expert-parallel group size: replicas of the pipeline, one per
                          // member, each with its own data; MoE experts sharded across them
  bool fp64 = false;      // --dtype fp32|fp64
  bool check = false;     // compare with the single-device reference
  std::string tracePath;
  uint64_t seed = 1;
  double timeoutSeconds = 60; // watchdog: longest wait without progress
  int64_t dropMessage = -1;   // testing: never send this message id
  bool streamThreads = false; // --stream-threads: every stream its own thread (always with --ep > 1)
  double tolerance = -1;      // --tolerance; default per dtype
  // Training: the optimizer, token data, checkpoints.
  OptimizerConfig optimizer;
  std::string dataPath;       // --data: token ids; empty: synthetic data
  int dataBytes = 2;          // --data-dtype uint16|uint32
  std::string savePath, loadPath; // --save DIR, --load DIR
  // --no-attention: stages without attention, as the CUDA program builds them.
  bool attention = true;
  // Language models: the loss, and the vocabulary of synthetic token ids.
  LossKind loss = LossKind::Mse; // --loss mse|cross-entropy
  int vocab = 0;                 // --vocab N (0: not given)
  // --max-memory: the bytes the run's estimate may reach (exec/MemoryEstimate.h);
  // 0: the machine's memory or the address-space limit.
  double maxMemoryBytes = 0;
};

// Parses argv; on error or --help prints to stderr and returns false with `status` set.
bool parseRunOptions(int argc, char **argv, RunOptions &options, int &status);

} // namespace pipert
