// runProgram: what an emitted program's main() does. It builds the model the
// options describe and trains: each step runs the compiler's stream programs
// through PipelineRun (exec/StreamEngine.h) over the global batch, syncs gradients (replicated copies, then expert-
// parallel replicas) and takes an optimizer step (Training.h). With --check a
// single-device, non-pipelined reference with its own parameters and optimizer
// takes the same steps; the loss, every gradient and every parameter after the
// step are compared each step, and the measured peak activations with the
// compiler's prediction. --save/--load write and resume a checkpoint.
#include "pipert/Program.h"

#include "exec/PipelineRun.h"
#include "exec/Trainer.h"

#include "pipert/ProgramEncoding.h"
#include "pipert/Checkpoint.h"
#include "pipert/ProgramValidation.h"
#include "pipert/StreamProgram.h"
#include "pipert/Reference.h"
#include "pipert/TokenData.h"
#include "pipert/Trace.h"

#include <cmath>
#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace pipert {

namespace {

// The baseline for --model empty: every op's hand-off (a 1x1 tensor into a queue
// and out again) done by one thread in a plain loop, without streams or events.
template <typename T>
double plainLoopMicrosPerOp(const Program &program) {
  std::deque<Tensor<T>> queue;
  int64_t ops = 0;
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < program.numRanks; ++r)
    for (uint32_t i = 0; i < program.ranks[r].numOps; ++i, ++ops) {
      queue.push_back(Tensor<T>(1, 1));
      if (queue.size() > 4)
        queue.pop_front();
    }
  double micros =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  return ops > 0 ? micros / double(ops) : 0.0;
}

// What a checkpoint must match to be resumed by this run.
std::string runIdentity(const Program &program, const RunOptions &options, int tokens) {
  char text[512];
  std::snprintf(text, sizeof text,
                "schedule %s (%s), %d ranks, %d stages, %d micro-batches; model %s, hidden %d, "
                "%d tokens per micro-batch, %d expert-parallel replicas; optimizer %s",
                program.name, program.parameters, program.numRanks, program.numStages,
                program.numMicrobatches,
                options.provider.empty() ? (options.moe ? "moe" : "mlp") : options.provider.c_str(), options.hidden, tokens,
                options.ep, options.optimizer.kind == OptimizerKind::AdamW ? "adamw" : "sgd");
  return text;
}

template <typename T>
void allCopies(Trainer<T> &trainer, std::vector<Stage<T> *> &copies,
               std::vector<StageOptimizerState<T> *> &states) {
  for (const auto &replica : trainer.replicas())
    for (Stage<T> *stage : replica) {
      copies.push_back(stage);
      states.push_back(&trainer.state(stage));
    }
}

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

// The built-in model, or the user's from a stage provider (--model NAME).
ModelSpec modelOf(const Program &program, const RunOptions &options) {
  if (options.provider.empty())
    return builtinModel(program.numStages, options.seed, options.hidden, options.moe, options.attention);
  StageRequest request;
  request.seed = options.seed;
  request.hidden = options.hidden;
  request.tokens = options.seq * options.microBatchSize;
  request.sequenceLength = options.seq;
  request.path = options.providerPath;
  return providedModel(*findStageProvider(options.provider), program.numStages, request);
}

const char *modelName(const RunOptions &options) {
  return options.empty ? "empty" : options.moe ? "moe" : options.provider.empty() ? "mlp" : options.provider.c_str();
}

template <typename T>
int run(const Program &program, const StreamProgram &streams, const RunOptions &options) {
  ModelSpec model = modelOf(program, options);
  std::unique_ptr<TokenData> tokenData;
  if (!options.dataPath.empty())
    tokenData = std::make_unique<TokenData>(options.dataPath, options.dataBytes, options.seq);
  // Each expert-parallel replica runs M micro-batches of its own.
  BatchSpec batch{program.numMicrobatches * options.ep, options.seq * options.microBatchSize,
                  options.hidden, options.seed + 1};
  batch.tokenData = tokenData.get();
  batch.loss = options.loss;
  batch.vocab = options.vocab;
  batch.sequenceLength = options.seq;
  validateBatch(batch);
  std::printf("pipert: schedule %s (%s): %d ranks, %d stages, %d micro-batches; model %s, %s, "
              "hidden %d, %d tokens per micro-batch",
              program.name, program.parameters, program.numRanks, program.numStages,
              program.numMicrobatches, modelName(options),
              options.fp64 ? "fp64" : "fp32", options.hidden, batch.tokens);
  if (options.ep > 1)
    std::printf("; %d expert-parallel replicas", options.ep);
  std::printf("\n");

  ExpertGroups<T> experts(options.ep, options.timeoutSeconds);
  std::vector<std::unique_ptr<PipelineRun<T>>> replicas;
  std::vector<std::vector<Stage<T> *>> replicaStages;
  for (int e = 0; e < options.ep; ++e) {
    replicas.push_back(std::make_unique<PipelineRun<T>>(program, streams, options, model, batch, e,
                                                        options.ep > 1 ? &experts : nullptr));
    replicaStages.push_back(replicas.back()->stageCopies());
  }
  for (Stage<T> *stage : replicaStages[0]) // a clear error now, not a failing rank later
    if (stage->stageIndex() == 0 && stage->inputWidth() != batchInputWidth(batch))
      throw std::invalid_argument(std::string("stage 0 takes inputs ") + std::to_string(stage->inputWidth()) +
                                  " wide, but --loss " + lossName(batch.loss) + " batches are " +
                                  std::to_string(batchInputWidth(batch)) +
                                  (batch.loss == LossKind::CrossEntropy ? " wide (token ids)" : " wide (--hidden)"));
  Trainer<T> trainer(options.optimizer, replicaStages);
  std::vector<Stage<T> *> copies;
  std::vector<StageOptimizerState<T> *> states;
  allCopies(trainer, copies, states);
  std::string identity = runIdentity(program, options, batch.tokens);
  int64_t done = 0; // steps taken before this run (--load)
  if (!options.loadPath.empty()) {
    done = loadCheckpoint(options.loadPath, identity, copies, states);
    std::printf("resumed from %s after step %lld\n", checkpointFile(options.loadPath).c_str(),
                (long long)done);
  }
  if (!options.empty)
    std::printf("training: optimizer %s, lr %g, %s data%s\n",
                options.optimizer.kind == OptimizerKind::AdamW ? "adamw" : "sgd", options.optimizer.lr,
                tokenData ? "token" : "synthetic",
                options.loss == LossKind::CrossEntropy ? ", cross-entropy loss" : "");
  std::unique_ptr<CheckedReference<T>> checked;
  if (options.check) {
    checked = std::make_unique<CheckedReference<T>>(model, options.optimizer);
    checked->trainer.copyFrom(trainer); // after --load: where the checkpoint left off
  }
  double tolerance = options.tolerance > 0 ? options.tolerance : (options.fp64 ? 1e-10 : 1e-4);
  CheckTotals totals;

  std::vector<StepResult> last(options.ep);
  for (int k = 1; k <= options.steps; ++k) {
    int64_t step = done + k;
    batch.step = step;
    auto stepStart = std::chrono::steady_clock::now();
    for (int e = 0; e < options.ep; ++e) { // replicas run at once: their all-to-alls meet
      replicas[e]->setDataStep(step);
      replicas[e]->startStep();
    }
    for (int e = 0; e < options.ep; ++e)
      last[e] = replicas[e]->finishStep();
    double loss = 0, millis = 0;
    for (const StepResult &r : last) {
      loss += r.loss;
      millis = std::max(millis, r.milliseconds);
    }
    last[0].loss = loss;
    last[0].milliseconds = millis;
    if (options.empty) {
      if (k == options.steps)
        std::printf("step %lld: loss %.9g, %.3f ms\n", (long long)step, loss, millis);
      continue;
    }
    trainer.syncReplicas();
    double norm = trainer.step(step);
    double stepMillis =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - stepStart).count();
    std::printf("step %lld: loss %.9g (%a), %.3f ms, %.0f tokens/s, grad norm %.6g\n", (long long)step,
                loss, loss, stepMillis, double(batch.microBatches) * batch.tokens / (stepMillis / 1000.0),
                norm);
    if (checked) { // the reference's own step from the same parameters and batch
      ReferenceResult<T> expected = checked->reference.run(batch);
      checked->trainer.step(step);
      double lossError = std::abs(loss - expected.loss) / std::max(std::abs(expected.loss), 1e-300);
      GradientComparison gradients =
          compareGradients(expected.gradients, trainer.snapshot(expected.gradients, true), tolerance);
      GradientComparison parameters =
          compareGradients(checked->trainer.snapshot(expected.gradients, false),
                           trainer.snapshot(expected.gradients, false), tolerance);
      totals.loss = std::max(totals.loss, lossError);
      totals.passed &= lossError <= tolerance;
      totals.add(totals.gradients, gradients);
      totals.add(totals.parameters, parameters);
      std::printf("check step %lld: loss %.3g, gradients %.3g, parameters %.3g (max relative errors)\n",
                  (long long)step, lossError, gradients.maxRelError(), parameters.maxRelError());
      if (!gradients.passed)
        std::printf("%s\n", gradients.report().c_str());
      if (!parameters.passed)
        std::printf("parameters after the step:\n%s\n", parameters.report().c_str());
    }
  }
  const StepResult &first = last[0];
  if (!options.tracePath.empty() && !writeTrace(options.tracePath, program, first.timings))
    return 2;
  if (!options.savePath.empty()) {
    saveCheckpoint(options.savePath, identity, done + options.steps, copies, states);
    std::printf("saved %s after step %lld\n", checkpointFile(options.savePath).c_str(),
                (long long)(done + options.steps));
  }
  if (options.empty) {
    int64_t ops = 0;
    for (int r = 0; r < program.numRanks; ++r)
      ops += program.ranks[r].numOps;
    std::printf("runtime overhead: %.3f us per op (%lld ops, longest rank %.3f ms); "
                "the same hand-offs in a plain loop: %.3f us per op\n",
                1000.0 * first.milliseconds * program.numRanks / std::max<int64_t>(ops, 1),
                (long long)ops, first.milliseconds, plainLoopMicrosPerOp<T>(program));
    return 0;
  }
  PoolStats pool = replicas[0]->poolStats();
  std::printf("activation buffers: %lld allocated, %lld reused, at most %lld in use at once\n",
              (long long)pool.allocations, (long long)pool.reuses, (long long)pool.peakLive);
  bool passed = true;
  std::printf("peak activations per rank (measured / predicted):");
  for (int r = 0; r < program.numRanks; ++r) {
    int64_t measured = 0;
    for (const StepResult &replica : last)
      measured = std::max(measured, replica.peakActivations[r]);
    std::printf(" %lld/%lld", (long long)measured, (long long)program.predictedPeakActivations[r]);
    passed &= measured == program.predictedPeakActivations[r];
  }
  std::printf(passed ? ": match\n" : ": MISMATCH\n");
  if (!options.check)
    return passed ? 0 : 1;
  std::printf("check: %d steps, max relative error: loss %.3g\n", options.steps, totals.loss);
  std::printf("check: max relative gradient error per stage:");
  for (size_t s = 0; s < totals.gradients.size(); ++s)
    std::printf(" %zu: %.3g", s, totals.gradients[s]);
  std::printf("\ncheck: max relative parameter error per stage:");
  for (size_t s = 0; s < totals.parameters.size(); ++s)
    std::printf(" %zu: %.3g", s, totals.parameters[s]);
  bool ok = passed && totals.passed;
  std::printf("\ncheck: tolerance %g: %s\n", tolerance, ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

} // namespace

int runProgram(const Program &program, const StreamProgram &streams, int argc, char **argv) {
  RunOptions options;
  int status = 0;
  if (!parseRunOptions(argc, argv, options, status))
    return status;
  try {
    validateProgram(program, streams); // a bad table is an error here, not a crash or hang later
    return options.fp64 ? run<double>(program, streams, options)
                        : run<float>(program, streams, options);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "pipert: error: %s\n", e.what());
    return 2;
  }
}

int runEncodedProgram(const char *text, size_t size, int argc, char **argv) {
  ProgramData data;
  int status = startEncodedProgram(text, size, argc, argv, data, "re-emit it with this pipec");
  if (status >= 0)
    return status;
  ProgramView view(data);
  return runProgram(view.program(), view.streams(), argc, argv);
}

} // namespace pipert
