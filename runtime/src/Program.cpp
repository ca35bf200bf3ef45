// runProgram: what an emitted program's main() does. It builds the model the
// options describe, runs the training steps through PipelineRun, and with
// --check compares the loss and every parameter's gradient with a single-device,
// non-pipelined run of the same global batch (replicated stages: the gradient
// summed over their copies), and the measured peak activations with the
// compiler's prediction.
#include "pipert/Program.h"

#include "exec/PipelineRun.h"
#include "exec/Replay.h"
#include "exec/TraceWriter.h"

#include "pipert/Reference.h"

#include <cmath>
#include <cstdio>

namespace pipert {

namespace {

ModelSpec modelFor(const Program &program, const RunOptions &options) {
  ModelSpec model;
  model.seed = options.seed;
  for (int s = 0; s < program.numStages; ++s) {
    StageSpec spec;
    if (options.moe) {
      spec.kind = StageKind::Moe;
      spec.moe = MoeConfig{options.hidden, 2 * options.hidden, 4, 2, true};
    } else {
      spec.dense = DenseConfig{options.hidden, 4 * options.hidden, true};
    }
    model.stages.push_back(spec);
  }
  return model;
}

template <typename T>
int run(const Program &program, const RunOptions &options) {
  ModelSpec model = modelFor(program, options);
  BatchSpec batch{program.numMicrobatches, options.seq * options.microBatchSize, options.hidden,
                  options.seed + 1};
  validateBatch(batch);
  std::printf("pipert: schedule %s (%s): %d ranks, %d stages, %d micro-batches; model %s, %s, "
              "hidden %d, %d tokens per micro-batch\n",
              program.name, program.parameters, program.numRanks, program.numStages,
              program.numMicrobatches, options.moe ? "moe" : "mlp", options.fp64 ? "fp64" : "fp32",
              options.hidden, batch.tokens);

  PipelineRun<T> pipeline(program, options, model, batch);
  StepResult last;
  for (int step = 1; step <= options.steps; ++step) {
    last = pipeline.runStep();
    if (!options.empty || step == options.steps)
      std::printf("step %d: loss %.9g, %.3f ms\n", step, last.loss, last.milliseconds);
  }
  if (!options.tracePath.empty() && !writeTrace(options.tracePath, program, last.timings))
    return 2;
  double replayed = replayedMillis(program, last.timings);
  std::printf("step time %.3f ms, schedule with the measured op times %.3f ms: efficiency %.1f%%\n",
              last.milliseconds, replayed, last.milliseconds > 0 ? 100 * replayed / last.milliseconds : 100.0);

  if (options.empty) {
    int64_t ops = 0;
    for (int r = 0; r < program.numRanks; ++r)
      ops += program.ranks[r].numOps;
    std::printf("runtime overhead: %.3f us per op (%lld ops, longest rank %.3f ms)\n",
                1000.0 * last.milliseconds * program.numRanks / std::max<int64_t>(ops, 1),
                (long long)ops, last.milliseconds);
    return 0;
  }
  bool passed = true;
  std::printf("peak activations per rank (measured / predicted):");
  for (int r = 0; r < program.numRanks; ++r) {
    std::printf(" %lld/%lld", (long long)last.peakActivations[r],
                (long long)program.predictedPeakActivations[r]);
    passed &= last.peakActivations[r] == program.predictedPeakActivations[r];
  }
  std::printf(passed ? ": match\n" : ": MISMATCH\n");
  if (!options.check)
    return passed ? 0 : 1;

  auto stages = makeAllStages<T>(model);
  ReferenceResult<T> reference = Reference<T>(stagePointers(stages)).run(batch);
  double tolerance = options.tolerance > 0 ? options.tolerance : (options.fp64 ? 1e-10 : 1e-4);
  double lossError = std::abs(last.loss - reference.loss) / std::max(std::abs(reference.loss), 1e-300);
  GradientComparison comparison = compareGradients(reference.gradients, pipeline.gradients(), tolerance);
  std::printf("check: loss %.9g (reference %.9g, relative error %.3g)\n", last.loss, reference.loss,
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
    return options.fp64 ? run<double>(program, options) : run<float>(program, options);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "pipert: error: %s\n", e.what());
    return 2;
  }
}

} // namespace pipert
