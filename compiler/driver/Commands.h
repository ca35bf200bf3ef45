// The pipec subcommands. Each takes parsed arguments and returns the exit status:
// 0 clean, 1 errors (or warnings under --werror), 2 usage or I/O errors.
#pragma once

#include "check/Checks.h"
#include "diag/Diagnostics.h"
#include "elab/Elaborator.h"
#include "cost/CostInput.h"
#include "elab/Domain.h"
#include "sim/Jitter.h"

#include <string>
#include <vector>

namespace pipec {

enum ExitStatus { kExitClean = 0, kExitErrors = 1, kExitUsage = 2 };

enum class DiagFormat { Text, Json, Sarif, Github };

// The check options, the same for every subcommand that runs the checks
// (check, sim, emit, build), and the cost model.
struct CommonArgs {
  ElabOptions elab;
  CheckOptions checks;
  DiagFormat format = DiagFormat::Text;
  bool explain = false;
  bool werror = false;
  WarningPolicy warnings; // -W flags: warnings off, or errors, one by one
  bool timePasses = false;
  bool color = false;
  unsigned errorLimit = limits::kErrorsShown; // --error-limit: errors shown before stopping, 0 = all
  // --costs FILE then --cost NAME=V, in order: the memory check, the simulator and
  // the overlap plans of `emit/build --target cuda`.
  std::vector<CostOverride> costs;
  // Checking a schedule family (pipec check): every -D as written (elab.defines
  // holds them too when each names one value), the threads (-j; 0: every core),
  // --fail-fast and the most points one file may have (--max-points).
  std::vector<ParamDefine> defines;
  unsigned jobs = 0;
  bool failFast = false;
  uint64_t maxPoints = kDefaultMaxPoints;
};

enum class EmitTarget { IR, AST, TorchCsv, Cpu, Cuda, Json };

// --- the planner's inputs (sim and plan) ------------------------------------------
// A model, a cluster and how it trains: with --model, sim reports seconds and
// bytes and plan searches layouts. Counts of 0 are "not given".
struct ModelArgs {
  std::string model;   // --model config.json; empty: costs stay in units
  std::string cluster; // --cluster FILE or preset (a100, h100, h800, h200, b200, gb200)
  int64_t gpus = 0;    // --gpus; 0: the cluster's
  int64_t globalBatch = 0, seqLen = 0, microBatchSize = 1;
  std::string recompute = "none"; // none | selective | full
  int64_t recomputeLayers = 0;     // with full: the first N layers of each stage (0: all)
  int zero = 0;
  int64_t tensorParallel = 1;
  int64_t expertParallel = 0; // --ep; 0: plan tries every size, sim uses 1
  // Which of --tp, --micro-batch-size, --recompute, --zero were given: plan
  // searches the others (sim uses their defaults above).
  bool tpGiven = false, cpGiven = false, microBatchGiven = false, recomputeGiven = false,
       zeroGiven = false;
  int64_t contextParallel = 1; // --cp
  std::string precision = "bf16";  // --precision bf16 | fp8
  std::string attention = "flash"; // --attention flash | eager
  bool gradFp32 = false;           // --grad-fp32
  bool tpOverlap = false;          // --tp-overlap
  std::string tpOverlapCfg;        // --tp-overlap-cfg: Transformer Engine's userbuffers configuration (JSON)
  bool tpOverlapCfgGiven = false;
  bool epOverlap = false;          // --ep-overlap (Training::epCommOverlap)
  int64_t firstStageLayers = -1, lastStageLayers = -1; // --first/last-stage-layers; -1: even
  int64_t mtpLayers = -1; // --mtp-layers; -1: as the model's config says
  std::string pipelineLayout;      // --pipeline-layout
  bool given() const { return !model.empty(); }
};

// --rank-by (sim tables and plan): the order of rows, best first.
enum class RankByStat { Order, Mean, P99 };

struct PlanArgs {
  std::vector<std::string> files; // empty: the schedule library
  bool json = false;
  unsigned threads = 0;
  size_t rows = 20;
  // --rank-by mean|p99 with --jitter, --samples, --seed (driver/PlanRanking.h).
  RankByStat rankBy = RankByStat::Order;
  JitterSpec jitter;
  size_t samples = 200;
  uint64_t seed = 1;
  double timeBudget = 300;      // --time: seconds for the whole plan, remedies included
};

int runPlan(const PlanArgs &plan, const ModelArgs &model, const CommonArgs &args);

// pipec calibrate: measurements of the user's cluster -> a cluster file.
struct CalibrateArgs {
  std::vector<std::string> kineto; // --kineto: PyTorch profiler traces
  std::string sweep;               // --sweep: pipec-calibrate-sweep's results
  std::string programTrace;        // --pipec-trace: a pipec program's trace of `schedule`
  std::string schedule;            // the .pipe file the program trace ran
  std::vector<std::pair<std::string, int64_t>> defines; // -D for that schedule
  std::string output;              // -o: the cluster file
};
int runCalibrate(const CalibrateArgs &calibrate, const ModelArgs &model);
// ---------------------------------------------------------------------------------

struct SimArgs {
  ModelArgs model;
  bool compare = false;
  bool json = false; // --format json: the results as one JSON document
  // --sweep NAME=v1,v2,...: one run per value, of a parameter (integers) or of a
  // cost (`F`, `W[3]`: any number, on top of every other cost setting).
  struct SweepPoint {
    std::string setting; // "M=16", "F=1.5"
    std::vector<std::pair<std::string, int64_t>> defines;
    std::vector<CostOverride> costs;
  };
  std::vector<SweepPoint> sweep;
  bool timeline = false;
  std::string svgPath, tracePath;
  // Real conditions (sim/Variability.h, sim/LinkModel.h): --jitter with --samples,
  // --seed and --threads; --slow RANK=FACTOR (repeatable); --sensitivity; --topology
  // (a cluster file or preset: messages share its links). Tables: --rank-by.
  JitterSpec jitter;
  size_t samples = 1000;
  uint64_t seed = 1;
  unsigned threads = 0; // 0: every core
  std::vector<std::pair<int64_t, double>> slow;
  bool sensitivity = false;
  std::string topology;
  using RankBy = RankByStat;
  RankBy rankBy = RankBy::Order;
  bool perturbed() const { return jitter.active() || !slow.empty() || !topology.empty(); }
};

int runSim(const std::vector<std::string> &files, const SimArgs &sim, const CommonArgs &args);
int runCheck(const std::vector<std::string> &files, const CommonArgs &args);
int runEmit(const std::string &file, EmitTarget target, const std::string &output,
            const CommonArgs &args);
// `microbatches`: --microbatches N, the schedule's M (0: from the CSV).
int runImport(const std::string &file, const std::string &output, int64_t microbatches,
              const CommonArgs &args);

enum class BuildTarget { Cpu, Cuda };

struct BuildArgs {
  BuildTarget target = BuildTarget::Cpu;
  std::string output;     // -o EXE
  std::string keepSource; // --keep-source DIR: write the generated C++ there and keep it
  // --stages torchscript: link the LibTorch stage adapter (runtime/torch), so the
  // program runs exported PyTorch modules with --model torchscript.
  bool torchStages = false;
  std::vector<std::string> stageSources; // --stage-source FILE: the user's stages, linked in (CPU)
};

int runBuild(const std::string &file, const BuildArgs &build, const CommonArgs &args);

// --- fmt and lsp (FmtCommand.cpp, LspCommand.cpp) ---
struct FmtArgs {
  bool inPlace = false; // -i: rewrite the files
  bool check = false;   // --check: print a diff, exit 1 if a file is not formatted
  bool color = false;   // diagnostics of files that do not parse
};
int runFmt(const std::vector<std::string> &files, const FmtArgs &args);
// A Language Server on stdin/stdout until `exit` or end of input; the analyses
// it keeps stay within `memoryBudget` bytes (estimated; lsp/DocumentStore.h).
int runLsp(uint64_t memoryBudget);
// --- synth (SynthCommand.cpp): search for a schedule and write it as .pipe ---
struct SynthArgs {
  std::string placement = "one"; // one, interleaved, v, bidirectional
  std::vector<std::string> defines, costFlags; // -D NAME=VALUE, --cost NAME=V
  std::string costsFile, output = "-";
  bool budgetGiven = false;
  uint64_t budget = 0;            // --max-activations
  bool overlap = false, split = true;
  uint64_t seed = 1, iterations = 50000;
  double seconds = 60;
  std::string commandLine;        // recorded in the output's header
  bool exact = false;             // --exact: prove the schedule optimal
};

int runSynth(const SynthArgs &args);

} // namespace pipec
