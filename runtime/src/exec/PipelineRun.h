// One replica of the pipeline on the CPU: its stages and buffers (OpRunner.h)
// driven by the stream engine over the compiler's stream programs
// (StreamEngine.h), whose persistent workers run every step. After a step,
// replicated stages sum their gradients over their sync group, and the live
// activations each rank held are compared with the compiler's count.
#pragma once

#include "exec/OpRunner.h"
#include "exec/StreamEngine.h"

#include "pipert/Gradients.h"
#include "pipert/Program.h"
#include "pipert/StreamProgram.h"

#include <chrono>
#include <vector>

namespace pipert {

struct StepResult {
  double loss = 0;
  double milliseconds = 0;
  std::vector<int64_t> peakActivations; // measured, per rank
  std::vector<OpTiming> timings;
};

template <typename T>
class PipelineRun {
public:
  // Replica `replica` of `replicas` runs micro-batches replica*M .. replica*M+M-1
  // of `batch`; with expert groups, its MoE stages join them.
  PipelineRun(const Program &program, const StreamProgram &streams, const RunOptions &options,
              const ModelSpec &model, const BatchSpec &batch, int replica = 0,
              ExpertGroups<T> *experts = nullptr)
      : program_(program), ops_(program, options, model, batch, replica, experts),
        engine_(program, streams, ops_, engineOptions(options, experts != nullptr)) {}

  // A step in two halves, so that expert-parallel replicas run at once.
  void startStep() {
    ops_.beginStep();
    start_ = std::chrono::steady_clock::now();
    engine_.start();
  }
  StepResult finishStep() {
    engine_.wait();
    StepResult result;
    result.milliseconds =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
    syncReplicatedGradients();
    result.loss = ops_.loss();
    result.peakActivations = ops_.peakActivations();
    result.timings = ops_.timings();
    return result;
  }
  StepResult runStep() {
    startStep();
    return finishStep();
  }

  PoolStats poolStats() const { return ops_.poolStats(); }
  // The ops of the last step that started (after a failure: as far as it got).
  std::vector<OpTiming> timings() const { return ops_.timings(); }
  // After a failure: a worker is left inside a stage that never returned, so
  // this replica must not be destroyed (its stages are in use).
  bool stuck() const { return engine_.stuck(); }
  // Token data: the step whose micro-batches the next step draws.
  void setDataStep(int64_t step) { ops_.setDataStep(step); }
  // Every stage object this replica holds (replicated stages: each copy), by
  // rank then chunk: what the optimizer steps and a checkpoint saves.
  std::vector<Stage<T> *> stageCopies() { return ops_.stageCopies(); }

private:
  // A stage call that blocks on other replicas (the MoE all-to-all) must not
  // stall its rank's other streams: with expert parallelism each stream is a thread.
  static EngineOptions engineOptions(const RunOptions &options, bool expertParallel) {
    EngineOptions e;
    e.streamThreads = options.streamThreads || expertParallel;
    e.timeoutSeconds = options.timeoutSeconds;
    e.dropMessage = options.dropMessage;
    return e;
  }

  void syncReplicatedGradients() {
    for (uint32_t g = 0; g < program_.numSyncGroups; ++g) {
      const SyncGroupTable &group = program_.syncGroups[g];
      std::vector<std::vector<Parameter<T>>> copies;
      for (uint32_t k = 0; k < group.size; ++k)
        copies.push_back(ops_.stage(group.ranks[k], group.chunks[k]).parameters());
      for (size_t p = 0; p < copies.front().size(); ++p) {
        Tensor<T> sum = *copies.front()[p].grad;
        for (size_t k = 1; k < copies.size(); ++k)
          for (size_t e = 0; e < sum.size(); ++e)
            sum[e] += (*copies[k][p].grad)[e];
        for (auto &copy : copies)
          *copy[p].grad = sum;
      }
    }
  }

  const Program &program_;
  OpRunner<T> ops_;
  StreamEngine engine_; // after ops_: its workers stop before the stages go
  std::chrono::steady_clock::time_point start_;
};

} // namespace pipert
