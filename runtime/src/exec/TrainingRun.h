// TrainingRun<T>: one run of an emitted CPU program (runProgram), phase by
// phase:
//   1. prepare  the model, the token data and the batch the options describe;
//   2. build    the pipeline replicas (PipelineRun), the trainer, and --load's
//               checkpoint; with --check, the single-device reference;
//   3. steps    each step runs every replica's stream programs, sums the loss,
//               takes the optimizer step and, with --check, compares the
//               reference's step (loss, every gradient, every parameter);
//   4. finish   the trace, --save, and the report: the overhead (--model
//               empty), the activation buffers and peaks against the
//               compiler's prediction, the check's worst errors.
// A failing step (RunFailure: the watchdog, a failing rank) still writes the
// trace of what ran before it goes up to runProgram.
#pragma once

#include "exec/PipelineRun.h"
#include "exec/Trainer.h"

#include "pipert/Checkpoint.h"
#include "pipert/Reference.h"
#include "pipert/StreamProgram.h"
#include "pipert/TokenData.h"
#include "pipert/Trace.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace pipert {

// The single-device run that --check compares every step with: its own copy of
// the parameters and its own optimizer.
template <typename T>
struct CheckedReference {
  CheckedReference(const ModelSpec &model, const OptimizerConfig &optimizer)
      : stages(makeAllStages<T>(model)), reference(stagePointers(stages)),
        trainer(optimizer, {stagePointers(stages)}) {}
  std::vector<std::unique_ptr<Stage<T>>> stages;
  Reference<T> reference;
  Trainer<T> trainer;
};

// Worst relative errors over the steps, per stage.
struct CheckTotals {
  double loss = 0;
  std::vector<double> gradients, parameters;
  bool passed = true;
  void add(std::vector<double> &worst, const GradientComparison &c) {
    worst.resize(c.stages.size(), 0.0);
    for (size_t s = 0; s < c.stages.size(); ++s)
      worst[s] = std::max(worst[s], c.stages[s].maxRelError);
    passed &= c.passed;
  }
};

// Phase 1's result: what every step draws on.
struct RunInputs {
  ModelSpec model;
  std::unique_ptr<TokenData> tokenData;
  BatchSpec batch;
};

// The model (built-in or a provider's), the token data and the batch (Program.cpp).
RunInputs prepareInputs(const Program &program, const RunOptions &options);
// What a checkpoint must match to be resumed by this run.
std::string runIdentity(const Program &program, const RunOptions &options, int tokens);
// The baseline for --model empty: every op's hand-off done by one thread in a plain loop.
double plainLoopMicrosPerOp(const Program &program, bool fp64);

template <typename T>
class TrainingRun {
public:
  TrainingRun(const Program &program, const StreamProgram &streams, const RunOptions &options,
              RunInputs &inputs)
      : program_(program), options_(options), inputs_(inputs), batch_(inputs.batch),
        experts_(options.ep, options.timeoutSeconds), trainer_(build(streams)) {
    for (const auto &replica : trainer_.replicas())
      for (Stage<T> *stage : replica) {
        copies_.push_back(stage);
        states_.push_back(&trainer_.state(stage));
      }
    identity_ = runIdentity(program, options, batch_.tokens);
  }

  // Phase 2's end: --load, then the reference from where the checkpoint left off.
  void resume() {
    if (!options_.loadPath.empty()) {
      done_ = loadCheckpoint(options_.loadPath, identity_, copies_, states_);
      std::printf("resumed from %s after step %lld\n", checkpointFile(options_.loadPath).c_str(),
                  (long long)done_);
    }
    if (!options_.empty)
      std::printf("training: optimizer %s, lr %g, %s data%s\n",
                  options_.optimizer.kind == OptimizerKind::AdamW ? "adamw" : "sgd",
                  options_.optimizer.lr, inputs_.tokenData ? "token" : "synthetic",
                  options_.loss == LossKind::CrossEntropy ? ", cross-entropy loss" : "");
    if (options_.check) {
      checked_ = std::make_unique<CheckedReference<T>>(inputs_.model, options_.optimizer);
      checked_->trainer.copyFrom(trainer_);
    }
  }

  // Phase 3. A failing step writes the trace of what ran, and a replica left
  // with a stage that never returned is abandoned (not destroyed) before the
  // failure goes on up.
  void steps() {
    last_.resize(size_t(options_.ep));
    try {
      for (int k = 1; k <= options_.steps; ++k)
        step(k);
    } catch (const RunFailure &) {
      writeTraceOf(replicas_[0]->timings());
      for (auto &replica : replicas_)
        if (replica->stuck())
          (void)replica.release(); // its worker is still inside one of its stages
      throw;
    }
  }

  // Phase 4: the exit status.
  int finish() {
    const StepResult &first = last_[0];
    if (!writeTraceOf(first.timings))
      return 2;
    if (!options_.savePath.empty()) {
      saveCheckpoint(options_.savePath, identity_, done_ + options_.steps, copies_, states_);
      std::printf("saved %s after step %lld\n", checkpointFile(options_.savePath).c_str(),
                  (long long)(done_ + options_.steps));
    }
    if (options_.empty) {
      reportOverhead(first);
      return 0;
    }
    bool peaksMatch = reportActivations();
    if (!options_.check)
      return peaksMatch ? 0 : 1;
    return reportCheck(peaksMatch) ? 0 : 1;
  }

private:
  Trainer<T> build(const StreamProgram &streams) {
    std::vector<std::vector<Stage<T> *>> replicaStages;
    for (int e = 0; e < options_.ep; ++e) {
      replicas_.push_back(std::make_unique<PipelineRun<T>>(
          program_, streams, options_, inputs_.model, batch_, e, options_.ep > 1 ? &experts_ : nullptr));
      replicaStages.push_back(replicas_.back()->stageCopies());
    }
    for (Stage<T> *stage : replicaStages[0]) // a clear error now, not a failing rank later
      if (stage->stageIndex() == 0 && stage->inputWidth() != batchInputWidth(batch_))
        throw std::invalid_argument(
            std::string("stage 0 takes inputs ") + std::to_string(stage->inputWidth()) +
            " wide, but --loss " + lossName(batch_.loss) + " batches are " +
            std::to_string(batchInputWidth(batch_)) +
            (batch_.loss == LossKind::CrossEntropy ? " wide (token ids)" : " wide (--hidden)"));
    return Trainer<T>(options_.optimizer, replicaStages);
  }

  void step(int k) {
    int64_t step = done_ + k;
    batch_.step = step;
    auto stepStart = std::chrono::steady_clock::now();
    for (int e = 0; e < options_.ep; ++e) { // replicas run at once: their all-to-alls meet
      replicas_[e]->setDataStep(step);
      replicas_[e]->startStep();
    }
    for (int e = 0; e < options_.ep; ++e)
      last_[e] = replicas_[e]->finishStep();
    double loss = 0, millis = 0;
    for (const StepResult &r : last_) {
      loss += r.loss;
      millis = std::max(millis, r.milliseconds);
    }
    last_[0].loss = loss;
    last_[0].milliseconds = millis;
    if (options_.empty) {
      if (k == options_.steps)
        std::printf("step %lld: loss %.9g, %.3f ms\n", (long long)step, loss, millis);
      return;
    }
    trainer_.syncReplicas();
    double norm = trainer_.step(step);
    double stepMillis = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - stepStart)
                            .count();
    std::printf("step %lld: loss %.9g (%a), %.3f ms, %.0f tokens/s, grad norm %.6g\n",
                (long long)step, loss, loss, stepMillis,
                double(batch_.microBatches) * batch_.tokens / (stepMillis / 1000.0), norm);
    if (checked_)
      checkStep(step, loss);
  }

  // The reference's own step from the same parameters and batch.
  void checkStep(int64_t step, double loss) {
    ReferenceResult<T> expected = checked_->reference.run(batch_);
    checked_->trainer.step(step);
    double lossError = std::abs(loss - expected.loss) / std::max(std::abs(expected.loss), 1e-300);
    GradientComparison gradients =
        compareGradients(expected.gradients, trainer_.snapshot(expected.gradients, true), tolerance());
    GradientComparison parameters =
        compareGradients(checked_->trainer.snapshot(expected.gradients, false),
                         trainer_.snapshot(expected.gradients, false), tolerance());
    totals_.loss = std::max(totals_.loss, lossError);
    totals_.passed &= lossError <= tolerance();
    totals_.add(totals_.gradients, gradients);
    totals_.add(totals_.parameters, parameters);
    std::printf("check step %lld: loss %.3g, gradients %.3g, parameters %.3g (max relative errors)\n",
                (long long)step, lossError, gradients.maxRelError(), parameters.maxRelError());
    if (!gradients.passed)
      std::printf("%s\n", gradients.report().c_str());
    if (!parameters.passed)
      std::printf("parameters after the step:\n%s\n", parameters.report().c_str());
  }

  double tolerance() const {
    return options_.tolerance > 0 ? options_.tolerance : (options_.fp64 ? 1e-10 : 1e-4);
  }

  bool writeTraceOf(const std::vector<OpTiming> &timings) const {
    return options_.tracePath.empty() || writeTrace(options_.tracePath, program_, timings);
  }

  void reportOverhead(const StepResult &first) const {
    int64_t ops = 0;
    for (int r = 0; r < program_.numRanks; ++r)
      ops += program_.ranks[r].numOps;
    std::printf("runtime overhead: %.3f us per op (%lld ops, longest rank %.3f ms); "
                "the same hand-offs in a plain loop: %.3f us per op\n",
                1000.0 * first.milliseconds * program_.numRanks / std::max<int64_t>(ops, 1),
                (long long)ops, first.milliseconds, plainLoopMicrosPerOp(program_, options_.fp64));
  }

  // The pool's use, and each rank's peak activations against the prediction.
  bool reportActivations() const {
    PoolStats pool = replicas_[0]->poolStats();
    std::printf("activation buffers: %lld allocated, %lld reused, at most %lld in use at once\n",
                (long long)pool.allocations, (long long)pool.reuses, (long long)pool.peakLive);
    bool match = true;
    std::printf("peak activations per rank (measured / predicted):");
    for (int r = 0; r < program_.numRanks; ++r) {
      int64_t measured = 0;
      for (const StepResult &replica : last_)
        measured = std::max(measured, replica.peakActivations[r]);
      std::printf(" %lld/%lld", (long long)measured, (long long)program_.predictedPeakActivations[r]);
      match &= measured == program_.predictedPeakActivations[r];
    }
    std::printf(match ? ": match\n" : ": MISMATCH\n");
    return match;
  }

  bool reportCheck(bool peaksMatch) const {
    std::printf("check: %d steps, max relative error: loss %.3g\n", options_.steps, totals_.loss);
    std::printf("check: max relative gradient error per stage:");
    for (size_t s = 0; s < totals_.gradients.size(); ++s)
      std::printf(" %zu: %.3g", s, totals_.gradients[s]);
    std::printf("\ncheck: max relative parameter error per stage:");
    for (size_t s = 0; s < totals_.parameters.size(); ++s)
      std::printf(" %zu: %.3g", s, totals_.parameters[s]);
    bool ok = peaksMatch && totals_.passed;
    std::printf("\ncheck: tolerance %g: %s\n", tolerance(), ok ? "PASS" : "FAIL");
    return ok;
  }

  const Program &program_;
  const RunOptions &options_;
  RunInputs &inputs_;
  BatchSpec batch_;
  ExpertGroups<T> experts_;
  std::vector<std::unique_ptr<PipelineRun<T>>> replicas_; // before trainer_: it holds their stages
  Trainer<T> trainer_;
  std::vector<Stage<T> *> copies_;
  std::vector<StageOptimizerState<T> *> states_;
  std::string identity_;
  int64_t done_ = 0; // steps taken before this run (--load)
  std::unique_ptr<CheckedReference<T>> checked_;
  CheckTotals totals_;
  std::vector<StepResult> last_;
};

} // namespace pipert
