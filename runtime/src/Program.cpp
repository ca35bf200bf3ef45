// runProgram: what an emitted program's main() does, and the top every
// failure of a run reaches. It parses the options, validates the tables and
// hands the run to TrainingRun (exec/TrainingRun.h: prepare, build, steps,
// finish); a RunFailure (the watchdog, a failing rank) and any other error come
// back here, to be named on stderr and turned into the exit status --help
// lists. The helpers of TrainingRun's first phase live here too: the model,
// the data and the batch the options describe.
#include "pipert/Program.h"

#include "exec/MemoryEstimate.h"
#include "exec/StartupWatchdog.h"
#include "exec/TrainingRun.h"

#include "pipert/ExitStatus.h"
#include "pipert/ProgramEncoding.h"
#include "pipert/ProgramValidation.h"

#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace pipert {

namespace {

template <typename T>
double plainLoop(const Program &program) {
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

} // namespace

// The baseline for --model empty: every op's hand-off (a 1x1 tensor into a queue
// and out again) done by one thread in a plain loop, without streams or events.
double plainLoopMicrosPerOp(const Program &program, bool fp64) {
  return fp64 ? plainLoop<double>(program) : plainLoop<float>(program);
}

std::string runIdentity(const Program &program, const RunOptions &options, int tokens) {
  char text[512];
  std::snprintf(text, sizeof text,
                "schedule %s (%s), %d ranks, %d stages, %d micro-batches; model %s, hidden %d, "
                "%d tokens per micro-batch, %d expert-parallel replicas; optimizer %s",
                program.name, program.parameters, program.numRanks, program.numStages,
                program.numMicrobatches,
                options.provider.empty() ? (options.moe ? "moe" : "mlp") : options.provider.c_str(),
                options.hidden, tokens, options.ep,
                options.optimizer.kind == OptimizerKind::AdamW ? "adamw" : "sgd");
  return text;
}

// "4, 4, 3" (the first 8 and the count beyond them).
static std::string sizeList(const Program &program) {
  std::string text;
  for (int32_t mb = 0; mb < program.numMicrobatches && mb < 8; ++mb)
    text += (mb ? ", " : "") + std::to_string(program.microbatchSizes[mb]);
  if (program.numMicrobatches > 8)
    text += ", ... (" + std::to_string(program.numMicrobatches) + ")";
  return text;
}

RunInputs prepareInputs(const Program &program, const RunOptions &options) {
  RunInputs in;
  in.model = modelOf(program, options);
  if (!options.dataPath.empty())
    in.tokenData = std::make_unique<TokenData>(options.dataPath, options.dataBytes, options.seq);
  // Each expert-parallel replica runs M micro-batches of its own.
  in.batch = BatchSpec{program.numMicrobatches * options.ep, options.seq * options.microBatchSize,
                       options.hidden, options.seed + 1};
  in.batch.tokenData = in.tokenData.get();
  in.batch.loss = options.loss;
  in.batch.vocab = options.vocab;
  in.batch.sequenceLength = options.seq;
  if (program.microbatchSizes) { // `sizes`: micro-batch mb holds size_mb times the tokens
    in.batch.sizes = program.microbatchSizes;
    in.batch.sizesPeriod = program.numMicrobatches;
    for (int32_t mb = 0; mb < program.numMicrobatches; ++mb)
      in.batch.sizesTotal += program.microbatchSizes[mb];
  }
  validateBatch(in.batch);
  std::printf("pipert: schedule %s (%s): %d ranks, %d stages, %d micro-batches; model %s, %s, "
              "hidden %d, %d tokens per micro-batch",
              program.name, program.parameters, program.numRanks, program.numStages,
              program.numMicrobatches, modelName(options), options.fp64 ? "fp64" : "fp32",
              options.hidden, in.batch.tokens);
  if (in.batch.sizes)
    std::printf(" per unit of size (micro-batch sizes %s)", sizeList(program).c_str());
  if (options.ep > 1)
    std::printf("; %d expert-parallel replicas", options.ep);
  std::printf("\n");
  return in;
}

namespace {

// What start-up builds: the inputs, and the run that reads them (declared
// after them, so destroyed first).
template <typename T>
struct StartedRun {
  std::unique_ptr<RunInputs> inputs;
  std::unique_ptr<TrainingRun<T>> run;
};

template <typename T>
int train(const Program &program, const StreamProgram &streams, const RunOptions &options) {
  // On a thread of its own, watched phase by phase (exec/StartupWatchdog.h);
  // the steps have their own watchdog.
  StartedRun<T> started = runStartup<StartedRun<T>>(
      options.timeoutSeconds, [&program, &streams, &options](StartupPhase &phase) {
        StartedRun<T> s;
        phase("building the model and reading --data");
        s.inputs = std::make_unique<RunInputs>(prepareInputs(program, options));
        phase("building the pipeline");
        s.run = std::make_unique<TrainingRun<T>>(program, streams, options, *s.inputs);
        phase("resuming from --load");
        s.run->resume();
        return s;
      });
  started.run->steps();
  return started.run->finish();
}

} // namespace

int runProgram(const Program &program, const StreamProgram &streams, int argc, char **argv) {
  RunOptions options;
  int status = 0;
  if (!parseRunOptions(argc, argv, options, status))
    return status;
  try {
    validateProgram(program, streams); // a bad table is an error here, not a crash or hang later
    checkRunMemory(program, options);  // sizes past the machine: named here, not std::bad_alloc later
    return options.fp64 ? train<double>(program, streams, options)
                        : train<float>(program, streams, options);
  } catch (const RunFailure &failure) {
    std::fflush(stdout); // the steps so far, before the cause
    std::fprintf(stderr, "pipert: %s\n", failure.what());
    return failure.status();
  } catch (const std::bad_alloc &) {
    // What the estimate did not foresee (a user's stages, the allocator's
    // fragmentation) still names the sizes that asked for it.
    std::fflush(stdout);
    std::fprintf(stderr,
                 "pipert: error: out of memory with --hidden %d, --seq %d, --micro-batch-size %d "
                 "(the estimate was %llu bytes); lower them\n",
                 options.hidden, options.seq, options.microBatchSize,
                 (unsigned long long)estimateRunMemory(program, options).total().value);
    return kExitUsage;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "pipert: error: %s\n", e.what());
    return kExitUsage;
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
