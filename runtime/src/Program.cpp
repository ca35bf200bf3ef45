// runProgram: what an emitted program's main() does. It builds the model the
// options describe, runs the training steps through PipelineRun, and with
// --check compares the loss and every parameter's gradient with a single-device,
// non-pipelined run of the same global batch (replicated stages: the gradient
// summed over their copies), and the measured peak activations with the
// compiler's prediction.
#include "pipert/Program.h"

#include "exec/PipelineRun.h"

#include "pipert/ProgramEncoding.h"
#include "pipert/ProgramValidation.h"
#include "pipert/Reference.h"
#include "pipert/Trace.h"

#include <cmath>
#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <thread>
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

// Gradients of the replicas as one set, in the reference's layout: a parameter
// every replica holds (replicated weights) is summed; one only its owner holds
// (a sharded expert) is taken from it.
template <typename T>
GradientSet<T> mergeReplicas(const std::vector<GradientSet<T>> &replicas,
                             const GradientSet<T> &layout) {
  GradientSet<T> merged(layout.size());
  for (size_t s = 0; s < layout.size(); ++s)
    for (const NamedTensor<T> &want : layout[s]) {
      NamedTensor<T> sum{want.name, Tensor<T>(want.value.rows(), want.value.cols())};
      for (const GradientSet<T> &replica : replicas)
        for (const NamedTensor<T> &have : replica[s])
          if (have.name == want.name)
            for (size_t e = 0; e < sum.value.size(); ++e)
              sum.value[e] += have.value[e];
      merged[s].push_back(std::move(sum));
    }
  return merged;
}

template <typename T>
int run(const Program &program, const RunOptions &options) {
  ModelSpec model = builtinModel(program.numStages, options.seed, options.hidden, options.moe,
                                 /*attention=*/true);
  // Each expert-parallel replica runs M micro-batches of its own.
  BatchSpec batch{program.numMicrobatches * options.ep, options.seq * options.microBatchSize,
                  options.hidden, options.seed + 1};
  validateBatch(batch);
  std::printf("pipert: schedule %s (%s): %d ranks, %d stages, %d micro-batches; model %s, %s, "
              "hidden %d, %d tokens per micro-batch",
              program.name, program.parameters, program.numRanks, program.numStages,
              program.numMicrobatches, options.empty ? "empty" : options.moe ? "moe" : "mlp",
              options.fp64 ? "fp64" : "fp32", options.hidden, batch.tokens);
  if (options.ep > 1)
    std::printf("; %d expert-parallel replicas", options.ep);
  std::printf("\n");

  ExpertGroups<T> experts(options.ep, options.timeoutSeconds);
  std::vector<std::unique_ptr<PipelineRun<T>>> replicas;
  for (int e = 0; e < options.ep; ++e)
    replicas.push_back(std::make_unique<PipelineRun<T>>(program, options, model, batch, e,
                                                        options.ep > 1 ? &experts : nullptr));
  std::vector<StepResult> last(options.ep);
  for (int step = 1; step <= options.steps; ++step) {
    std::vector<std::thread> threads;
    for (int e = 0; e < options.ep; ++e)
      threads.emplace_back([&, e] { last[e] = replicas[e]->runStep(); });
    for (std::thread &t : threads)
      t.join();
    double loss = 0, millis = 0;
    for (const StepResult &r : last) {
      loss += r.loss;
      millis = std::max(millis, r.milliseconds);
    }
    last[0].loss = loss;
    last[0].milliseconds = millis;
    if (!options.empty || step == options.steps)
      std::printf("step %d: loss %.9g, %.3f ms\n", step, loss, millis);
  }
  const StepResult &first = last[0];
  if (!options.tracePath.empty() && !writeTrace(options.tracePath, program, first.timings))
    return 2;
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

  auto stages = makeAllStages<T>(model);
  ReferenceResult<T> reference = Reference<T>(stagePointers(stages)).run(batch);
  std::vector<GradientSet<T>> gradients;
  for (auto &replica : replicas)
    gradients.push_back(replica->gradients());
  GradientSet<T> pipelineGradients = mergeReplicas(gradients, reference.gradients);
  double tolerance = options.tolerance > 0 ? options.tolerance : (options.fp64 ? 1e-10 : 1e-4);
  double lossError = std::abs(first.loss - reference.loss) / std::max(std::abs(reference.loss), 1e-300);
  GradientComparison comparison = compareGradients(reference.gradients, pipelineGradients, tolerance);
  std::printf("check: loss %.9g (reference %.9g, relative error %.3g)\n", first.loss, reference.loss,
              lossError);
  std::printf("check: max relative gradient error per stage:");
  for (const StageError &e : comparison.stages)
    std::printf(" %d: %.3g", e.stage, e.maxRelError);
  bool ok = passed && comparison.passed && lossError <= tolerance;
  std::printf("\ncheck: tolerance %g: %s\n", tolerance, ok ? "PASS" : "FAIL");
  if (!comparison.passed)
    std::printf("%s\n", comparison.report().c_str());
  return ok ? 0 : 1;
}

} // namespace

int runProgram(const Program &program, int argc, char **argv) {
  RunOptions options;
  int status = 0;
  if (!parseRunOptions(argc, argv, options, status))
    return status;
  try {
    validateProgram(program); // a bad table is an error here, not a crash or hang later
    return options.fp64 ? run<double>(program, options) : run<float>(program, options);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "pipert: error: %s\n", e.what());
    return 2;
  }
}

int runEncodedProgram(const char *text, size_t size, int argc, char **argv) {
  ProgramData data;
  int status = startEncodedProgram(text, size, argc, argv, data);
  if (status >= 0)
    return status;
  ProgramView view(data);
  return runProgram(view.program(), argc, argv);
}

} // namespace pipert
