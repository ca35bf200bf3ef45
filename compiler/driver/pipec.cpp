// The pipec command line. This file only parses arguments, rejects combinations
// a subcommand cannot honour, and dispatches to a subcommand (Commands.h); it
// holds no compiler logic.
#include "driver/Commands.h"
#include "driver/TorchCsvInput.h"
#include "plan/GpuPresets.h"
#include "sim/Variability.h"
#include "diag/WarningFlags.h"
#include "frontend/FlagNames.h"

#include "PipecVersion.h"
#include "support/SafeText.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <new>
#include <limits>
#include <memory>
#include <sstream>
#include <vector>

using namespace llvm;

namespace {

cl::SubCommand CheckCmd("check", "Check schedule files and report every problem");
cl::SubCommand EmitCmd("emit", "Write an intermediate form of a schedule");
cl::SubCommand SimCmd("sim", "Simulate schedules under a cost model");
cl::SubCommand ImportCmd("import", "Turn a schedule written by another tool into a .pipe file");
cl::SubCommand BuildCmd("build", "Compile a checked schedule into an executable");
cl::SubCommand PlanCmd("plan", "Rank schedules and layouts for a model on a cluster");
cl::SubCommand CalibrateCmd("calibrate", "Write a cluster file from measurements of your own GPUs");
cl::SubCommand SynthCmd("synth", "Search for a schedule and write it as a .pipe file");

// Attaches an option to several subcommands in one modifier, so that an option
// shared by a group of subcommands is declared once, for the whole group.
struct subs {
  std::vector<cl::SubCommand *> commands;
  subs(std::initializer_list<cl::SubCommand *> list) : commands(list) {}
  template <class Opt> void apply(Opt &option) const {
    for (cl::SubCommand *command : commands)
      option.addSubCommand(*command);
  }
};

// Every subcommand that runs the front end and the checks takes the check options.
const subs Checking{&CheckCmd, &SimCmd, &EmitCmd, &BuildCmd};
// Those whose --format is the diagnostics' format (sim's prints its results).
const subs LintFormat{&CheckCmd, &EmitCmd, &BuildCmd};
// Those that use a cost model: the memory check, the simulator and the CUDA
// program's overlap plans.
const subs Costed{&CheckCmd, &SimCmd, &EmitCmd, &BuildCmd};

cl::OptionCategory Category("pipec options");

// --- check options (check, sim, emit, build) ---------------------------------
cl::list<std::string> Defines("D", cl::Prefix, cl::desc("Set a schedule parameter"),
                              cl::value_desc("NAME=VALUE"), Checking, cl::cat(Category));
// import warns too (TorchLossOrder), so it takes the warning flags.
cl::opt<bool> Werror("werror", cl::desc("Treat warnings as errors"), Checking, cl::sub(ImportCmd),
                     cl::cat(Category));
// -W<Name>, -Wno-<Name>, -Werror=<Name>, -Wno-error=<Name>, in order (WarningFlags.h).
cl::list<std::string> WarningFlagValues(
    "W", cl::Prefix,
    cl::desc("Control one warning by the name it prints in [brackets]: -W<Name> reports it, "
             "-Wno-<Name> does not, -Werror=<Name> makes it an error, -Wno-error=<Name> "
             "exempts it from --werror; a later flag wins"),
    cl::value_desc("[no-|error=|no-error=]Name"), Checking, cl::sub(ImportCmd), cl::cat(Category));
// Applies --werror, then every -W flag in command-line order; false with `error`
// set for a flag that names no warning.
bool readWarningFlags(pipec::CommonArgs &args, std::string &error) {
  pipec::WarningFlags flags;
  flags.werror = Werror;
  for (const std::string &flag : WarningFlagValues)
    if (!flags.apply(flag, error))
      return false;
  args.werror = flags.werror;
  args.warnings = std::move(flags.policy);
  return true;
}
cl::opt<uint64_t> MaxActivations(
    "max-activations",
    cl::desc("Error when a rank holds more micro-batches' activations (default: no limit)"),
    cl::value_desc("N"), Checking, cl::cat(Category));
// import refuses a CSV whose schedule would be over the same limit.
cl::opt<uint64_t> MaxOps("max-ops", cl::desc("Refuse schedules with more ops than this"),
                         cl::init(pipec::ElabLimits().maxOps), Checking, cl::sub(ImportCmd),
                         cl::cat(Category));
cl::opt<uint64_t> MaxIterations("max-iterations",
                                cl::desc("Refuse schedules whose loops run more iterations"),
                                cl::init(pipec::ElabLimits().maxIterations), Checking,
                                cl::cat(Category));
cl::opt<bool> TimePasses("time-passes", cl::desc("Print the time each phase takes"), Checking,
                         cl::cat(Category));
cl::opt<unsigned> ErrorLimit("error-limit",
                             cl::desc("Stop after this many errors (0: no limit)"),
                             cl::value_desc("N"), cl::init(20), Checking, cl::sub(ImportCmd),
                             cl::cat(Category));
cl::opt<bool> NoColor("no-color", cl::desc("Never color diagnostics"), Checking,
                      cl::cat(Category));
// import's --format is its diagnostics' too.
cl::opt<pipec::DiagFormat> Format(
    "format", cl::desc("How to print diagnostics"), cl::init(pipec::DiagFormat::Text),
    LintFormat, cl::sub(ImportCmd), cl::cat(Category),
    cl::values(clEnumValN(pipec::DiagFormat::Text, "text", "clang-style text on stderr"),
               clEnumValN(pipec::DiagFormat::Json, "json", "one JSON document on stdout"),
               clEnumValN(pipec::DiagFormat::Sarif, "sarif", "SARIF 2.1.0 on stdout"),
               clEnumValN(pipec::DiagFormat::Github, "github",
                          "GitHub workflow annotations on stdout")));
// sim's output is its results; its diagnostics are always text on stderr.
enum class SimFormat { Text, Json };
cl::opt<SimFormat> SimResultFormat(
    "format", cl::desc("How to print the results (diagnostics are text on stderr)"),
    cl::init(SimFormat::Text), cl::sub(SimCmd), cl::cat(Category),
    cl::values(clEnumValN(SimFormat::Text, "text", "a report on stdout"),
               clEnumValN(SimFormat::Json, "json", "one JSON document on stdout")));

// Costs drive the memory check, the simulator and the CUDA program's overlap
// plans, and synth's search.
cl::list<std::string> CostFlags("cost", cl::desc("Override a cost (repeatable)"),
                                cl::value_desc("NAME=V or NAME[STAGE]=V"), Costed,
                                cl::sub(SynthCmd), cl::cat(Category));
cl::opt<std::string> CostsFile("costs", cl::desc("Read costs from a JSON object"),
                               cl::value_desc("file.json"), Costed, cl::sub(SynthCmd),
                               cl::cat(Category));

// --- check ---------------------------------------------------------------------
cl::list<std::string> CheckFiles(cl::Positional, cl::OneOrMore, cl::desc("<file.pipe>..."),
                                 cl::sub(CheckCmd));
// Checking a schedule family over its parameter domain.
cl::opt<unsigned> Jobs("j", cl::Prefix, cl::desc("Check points on N threads (default: every core)"),
                       cl::value_desc("N"), cl::sub(CheckCmd), cl::cat(Category));
cl::opt<bool> FailFast("fail-fast", cl::desc("Stop checking a domain at the first failing point"),
                       cl::sub(CheckCmd), cl::cat(Category));
cl::opt<uint64_t> MaxPoints("max-points",
                            cl::desc("Refuse domains with more points than this per file"),
                            cl::value_desc("N"), cl::init(pipec::kDefaultMaxPoints),
                            cl::sub(CheckCmd), cl::cat(Category));
cl::opt<bool> Explain("explain",
                      cl::desc("Describe placement, gradient-sync groups, memory and messages"),
                      cl::sub(CheckCmd), cl::cat(Category));

// --- sim -----------------------------------------------------------------------
cl::list<std::string> SimFiles(cl::Positional, cl::OneOrMore, cl::desc("<file.pipe>..."),
                               cl::sub(SimCmd));
cl::opt<bool> Compare("compare", cl::desc("One table row per schedule"), cl::sub(SimCmd),
                      cl::cat(Category));
cl::opt<std::string> Sweep("sweep", cl::desc("One row per value of a parameter or a cost"),
                           cl::value_desc("NAME=v1,v2,..."), cl::sub(SimCmd), cl::cat(Category));
cl::opt<bool> Timeline("timeline", cl::desc("Print an ASCII timeline"), cl::sub(SimCmd),
                       cl::cat(Category));
cl::opt<std::string> SvgPath("svg", cl::desc("Write the timeline as SVG"),
                             cl::value_desc("out.svg"), cl::sub(SimCmd), cl::cat(Category));
cl::opt<std::string> TracePath("trace", cl::desc("Write a Chrome/Perfetto trace"),
                               cl::value_desc("out.json"), cl::sub(SimCmd), cl::cat(Category));
// Real conditions: variability, stragglers, contention (sim/Variability.h, sim/LinkModel.h).
cl::opt<std::string> Jitter("jitter",
                            cl::desc("Draw each op's duration around its cost: lognormal:CV, "
                                     "normal:CV or trace:FILE (a program's --trace)"),
                            cl::value_desc("lognormal:CV|normal:CV|trace:FILE"),
                            subs{&SimCmd, &PlanCmd}, cl::cat(Category));
cl::opt<unsigned> Samples("samples",
                          cl::desc("Simulations drawn under --jitter (default: sim 1000, plan 200)"),
                          cl::value_desc("N"), subs{&SimCmd, &PlanCmd}, cl::cat(Category));
cl::opt<uint64_t> Seed("seed", cl::desc("Seed of --jitter's draws (default 1)"), cl::value_desc("S"),
                       cl::init(1), subs{&SimCmd, &PlanCmd}, cl::cat(Category));
cl::opt<unsigned> SimThreads("threads",
                             cl::desc("Threads for --jitter and --sensitivity (default: every "
                                      "core; the results do not depend on it)"),
                             cl::value_desc("N"), cl::init(0), cl::sub(SimCmd), cl::cat(Category));
cl::list<std::string> Slow("slow", cl::desc("A straggler: rank RANK's ops take FACTOR x their cost "
                                            "(repeatable)"),
                           cl::value_desc("RANK=FACTOR"), cl::sub(SimCmd), cl::cat(Category));
cl::opt<bool> Sensitivity("sensitivity",
                          cl::desc("Step growth when each rank alone is 10% slower"),
                          cl::sub(SimCmd), cl::cat(Category));
cl::opt<std::string> TopologyFile("topology",
                                  cl::desc("Messages share the links of this cluster's network"),
                                  cl::value_desc("cluster.json|preset"), cl::sub(SimCmd),
                                  cl::cat(Category));
enum class RankByOption { Order, Mean, P99 };
cl::opt<RankByOption> RankBy(
    "rank-by", cl::desc("Order a table by a step-time statistic, best first"),
    cl::init(RankByOption::Order), subs{&SimCmd, &PlanCmd}, cl::cat(Category),
    cl::values(clEnumValN(RankByOption::Mean, "mean", "the mean (the makespan without --jitter)"),
               clEnumValN(RankByOption::P99, "p99", "the 99th percentile (needs --jitter)")));

// --- the planner's inputs (sim and plan) -----------------------------------------
// With --model, sim reports seconds and bytes; plan needs them.
const subs Planning{&SimCmd, &PlanCmd, &CalibrateCmd};
cl::opt<std::string> ModelFile("model", cl::desc("A Hugging Face config.json: costs in seconds and bytes"),
                               cl::value_desc("config.json"), Planning, cl::cat(Category));
const std::string ClusterHelp = std::string("A cluster JSON file, or a preset: ") + pipec::plan::gpuPresetNames();
cl::opt<std::string> ClusterName("cluster", cl::desc(ClusterHelp),
                                 cl::value_desc("file.json|preset"), Planning, cl::cat(Category));
cl::opt<int64_t> Gpus("gpus", cl::desc("GPUs to use (default: the cluster's)"), cl::value_desc("N"),
                      Planning, cl::cat(Category));
cl::opt<int64_t> GlobalBatch("global-batch", cl::desc("Sequences per training step"),
                             cl::value_desc("N"), Planning, cl::cat(Category));
cl::opt<int64_t> SeqLen("seq-len", cl::desc("Tokens per sequence"), cl::value_desc("N"), Planning,
                        cl::cat(Category));
cl::opt<int64_t> MicroBatchSize("micro-batch-size", cl::desc("Sequences per micro-batch (plan: 1, 2, 4 searched when not given)"),
                                cl::value_desc("N"), cl::init(1), Planning, cl::cat(Category));
cl::opt<std::string> RecomputeMode("recompute",
                                   cl::desc("Activation recomputation: none, selective or full (plan: each searched when not given)"),
                                   cl::value_desc("none|selective|full"), cl::init("none"),
                                   Planning, cl::cat(Category));
cl::opt<int64_t> RecomputeNumLayers("recompute-num-layers",
                                    cl::desc("With --recompute full: recompute only the first N transformer layers of each stage, Megatron's --recompute-method block (default: every layer)"),
                                    cl::value_desc("N"), cl::init(0), Planning, cl::cat(Category));
cl::opt<int> ZeroStage("zero", cl::desc("ZeRO stage over data parallelism: 0, 1, 2 or 3 (plan: each searched when not given)"),
                       cl::value_desc("0-3"), cl::init(0), Planning, cl::cat(Category));
cl::opt<int64_t> TensorParallel("tp", cl::desc("Tensor-parallel size, sequence parallelism assumed (plan: 1-8 within a node searched when not given)"),
                                cl::value_desc("N"), cl::init(1), Planning, cl::cat(Category));
cl::opt<int64_t> ExpertParallel("ep",
                                cl::desc("Expert-parallel size (sim: default 1; plan: every size)"),
                                cl::value_desc("N"), Planning, cl::cat(Category));
cl::opt<int64_t> ContextParallel("cp", cl::desc("Context-parallel size, ring attention over the sequence (plan: up to 8 searched when not given, 4,096 tokens or more each)"),
                                 cl::value_desc("N"), cl::init(1), Planning, cl::cat(Category));
cl::opt<std::string> PrecisionMode("precision", cl::desc("Matmul precision: bf16, or fp8 (linear layers)"),
                                   cl::value_desc("bf16|fp8"), cl::init("bf16"), Planning, cl::cat(Category));
cl::opt<std::string> AttentionMode("attention",
                                   cl::desc("Attention kernel: flash (no s^2 activations) or eager"),
                                   cl::value_desc("flash|eager"), cl::init("flash"), Planning, cl::cat(Category));
cl::opt<bool> GradFp32("grad-fp32", cl::desc("Accumulate and reduce gradients in fp32 (Megatron's main_grad)"),
                       Planning, cl::cat(Category));
cl::opt<bool> TpOverlap("tp-overlap",
                        cl::desc("Tensor-parallel collectives overlap the matmuls, as Transformer Engine's userbuffers "
                                 "run them (its default configuration)"),
                        Planning, cl::cat(Category));
cl::opt<std::string> TpOverlapCfg("tp-overlap-cfg",
                                  cl::desc("A recipe's userbuffers configuration: a JSON object of Transformer "
                                           "Engine's overlap points (Megatron's --tp-comm-overlap-cfg); implies "
                                           "--tp-overlap"),
                                  cl::value_desc("file.json"), Planning, cl::cat(Category));
cl::opt<bool> EpOverlap("ep-overlap",
                        cl::desc("Expert all-to-all hidden under another micro-batch's compute in 1F1B's steady state "
                                 "(Megatron --overlap-moe-expert-parallel-comm): runs each schedule's ep_overlap/ form"),
                        Planning, cl::cat(Category));
cl::opt<int64_t> FirstStageLayers("first-stage-layers",
                                  cl::desc("Transformer layers on the first pipeline stage (default: even)"),
                                  cl::value_desc("N"), cl::init(-1), Planning, cl::cat(Category));
cl::opt<int64_t> LastStageLayers("last-stage-layers",
                                 cl::desc("Transformer layers on the last pipeline stage (default: even)"),
                                 cl::value_desc("N"), cl::init(-1), Planning, cl::cat(Category));
cl::opt<int64_t> MtpLayers("mtp-layers",
                           cl::desc("Multi-token prediction modules trained, on the last stage (default: the "
                                    "config's num_nextn_predict_layers; 0: none)"),
                           cl::value_desc("N"), cl::init(-1), Planning, cl::cat(Category));
cl::opt<std::string> PipelineLayout("pipeline-layout",
                                    cl::desc("Layers of every stage, Megatron style: 'Et*3|t*4|t*3L'"),
                                    cl::value_desc("layout"), Planning, cl::cat(Category));

// --- plan ----------------------------------------------------------------------
cl::list<std::string> PlanFiles(cl::Positional, cl::ZeroOrMore,
                                cl::desc("[<file.pipe>...] (default: the schedule library)"),
                                cl::sub(PlanCmd));
cl::opt<SimFormat> PlanFormat(
    "format", cl::desc("How to print the plan"), cl::init(SimFormat::Text), cl::sub(PlanCmd),
    cl::cat(Category),
    cl::values(clEnumValN(SimFormat::Text, "text", "a ranked table and a recommendation"),
               clEnumValN(SimFormat::Json, "json", "one JSON document on stdout")));
cl::opt<unsigned> PlanThreads("threads", cl::desc("Threads to plan with (default: all cores)"),
                              cl::value_desc("N"), cl::init(0), cl::sub(PlanCmd),
                              cl::cat(Category));
cl::opt<unsigned> PlanRows("rows", cl::desc("Candidates listed in the table and ranked exactly (0: all)"),
                           cl::value_desc("N"), cl::init(20), cl::sub(PlanCmd),
                           cl::cat(Category));
cl::opt<double> PlanTime("time", cl::desc("Seconds the whole plan may take, remedies included (0: no limit)"),
                         cl::value_desc("SECONDS"), cl::init(300), cl::sub(PlanCmd),
                         cl::cat(Category));

// --- calibrate -----------------------------------------------------------------
cl::list<std::string> CalibrateKineto("kineto", cl::desc("A PyTorch profiler (Kineto) trace, recorded with record_shapes=True (repeatable)"),
                                      cl::value_desc("trace.json"), cl::sub(CalibrateCmd),
                                      cl::cat(Category));
cl::opt<std::string> CalibrateSweep("sweep", cl::desc("The GPU sweep's results (pipec-calibrate-sweep -o FILE)"),
                                    cl::value_desc("sweep.json"), cl::sub(CalibrateCmd),
                                    cl::cat(Category));
cl::opt<std::string> CalibrateProgramTrace("pipec-trace", cl::desc("A pipec program's --trace of the schedule named, run at the --model and sizes given"),
                                           cl::value_desc("trace.json"), cl::sub(CalibrateCmd),
                                           cl::cat(Category));
cl::opt<std::string> CalibrateSchedule(cl::Positional, cl::desc("[<file.pipe>] (the schedule --pipec-trace ran)"),
                                       cl::sub(CalibrateCmd));
cl::list<std::string> CalibrateDefines("D", cl::Prefix, cl::desc("Set a parameter of that schedule"),
                                       cl::value_desc("NAME=VALUE"), cl::sub(CalibrateCmd),
                                       cl::cat(Category));
cl::opt<std::string> CalibrateOutput("o", cl::desc("The cluster file to write"), cl::Required,
                                     cl::value_desc("cluster.json"), cl::sub(CalibrateCmd),
                                     cl::cat(Category));

// --- emit and build: the one schedule they compile --------------------------------
cl::opt<std::string> ScheduleFile(cl::Positional, cl::Required, cl::desc("<file.pipe>"),
                                  cl::sub(EmitCmd), cl::sub(BuildCmd));

// --- emit ----------------------------------------------------------------------
cl::opt<pipec::EmitTarget> Target(
    "target", cl::desc("What to write"), cl::Required, cl::sub(EmitCmd), cl::cat(Category),
    cl::values(clEnumValN(pipec::EmitTarget::IR, "ir", "elaborated ops, one line per rank"),
               clEnumValN(pipec::EmitTarget::AST, "ast", "the syntax tree with source locations"),
               clEnumValN(pipec::EmitTarget::TorchCsv, "torch-csv",
                          "PyTorch's compute-only schedule CSV, one row per rank"),
               clEnumValN(pipec::EmitTarget::Cpu, "cpu",
                          "a C++ program for the CPU runtime (runs the checks first)"),
               clEnumValN(pipec::EmitTarget::Cuda, "cuda",
                          "a CUDA stream program over NCCL (runs the checks first)"),
               clEnumValN(pipec::EmitTarget::Json, "json",
                          "the checked program as JSON, for the Python runtime (runs the checks first)")));
cl::opt<std::string> Output("o", cl::desc("Output file (default: standard output)"),
                            cl::value_desc("file"), cl::init("-"), cl::sub(EmitCmd),
                            cl::cat(Category));

// --- build ---------------------------------------------------------------------
cl::opt<pipec::BuildTarget> BuildBackend(
    "target", cl::desc("The backend"), cl::Required, cl::sub(BuildCmd), cl::cat(Category),
    cl::values(clEnumValN(pipec::BuildTarget::Cpu, "cpu", "ranks are threads of one process"),
               clEnumValN(pipec::BuildTarget::Cuda, "cuda", "CUDA streams over NCCL, one GPU per rank, or all ranks on one GPU")));
cl::opt<std::string> BuildOutput("o", cl::desc("The executable to write"), cl::Required,
                                 cl::value_desc("exe"), cl::sub(BuildCmd), cl::cat(Category));
cl::opt<std::string> KeepSource("keep-source",
                                cl::desc("Write the generated C++ into DIR and keep it"),
                                cl::value_desc("dir"), cl::sub(BuildCmd), cl::cat(Category));
cl::list<std::string> StageSources(
    "stage-source",
    cl::desc("Compile and link the user's stages (C++ registering them with PIPERT_REGISTER_STAGES); "
             "the program selects them with --model NAME (CPU only; repeatable)"),
    cl::value_desc("file.cpp"), cl::sub(BuildCmd), cl::cat(Category));
// Stage libraries a CPU program links besides the built-in model.
enum class StageLibrary { Builtin, TorchScript };
cl::opt<StageLibrary> Stages(
    "stages", cl::desc("Stages the program can run besides the built-in model"), cl::sub(BuildCmd),
    cl::cat(Category), cl::init(StageLibrary::Builtin),
    cl::values(clEnumValN(StageLibrary::TorchScript, "torchscript",
                          "PyTorch modules exported with runtime/torch/pipec_torch_export.py, "
                          "run through LibTorch (--model torchscript --model-path DIR)")));

// --- import --------------------------------------------------------------------
enum class ImportSource { TorchCsv };
cl::opt<std::string> ImportFile(cl::Positional, cl::Required, cl::desc("<file.csv>"),
                                cl::sub(ImportCmd));
cl::opt<ImportSource> From("from", cl::desc("The format of the input"), cl::Required,
                           cl::sub(ImportCmd), cl::cat(Category),
                           cl::values(clEnumValN(ImportSource::TorchCsv, "torch-csv",
                                                 "PyTorch's compute-only schedule CSV")));
cl::opt<std::string> ImportOutput("o", cl::desc("Output file (default: standard output)"),
                                  cl::value_desc("file.pipe"), cl::init("-"),
                                  cl::sub(ImportCmd), cl::cat(Category));
cl::opt<int64_t> ImportMicrobatches(
    "microbatches",
    cl::desc("The schedule's micro-batches (default: one more than the CSV's highest); "
             "those the CSV never runs are then reported by check"),
    cl::value_desc("N"), cl::init(0), cl::sub(ImportCmd), cl::cat(Category));

// --- synth -----------------------------------------------------------------------
cl::opt<std::string> SynthPlacement("placement",
                                    cl::desc("Placement family: one, interleaved, v, bidirectional, or "
                                             "a FILE.pipe whose placement to take"),
                                    cl::value_desc("family"), cl::init("one"), cl::sub(SynthCmd),
                                    cl::cat(Category));
cl::list<std::string> SynthDefines("D", cl::Prefix, cl::desc("P, M (and v for interleaved); any of a FILE.pipe placement's parameters"),
                                   cl::value_desc("NAME=VALUE"), cl::sub(SynthCmd),
                                   cl::cat(Category));
cl::opt<uint64_t> SynthBudget("max-activations",
                              cl::desc("Activations each rank may hold (as for check)"),
                              cl::value_desc("N"), cl::sub(SynthCmd), cl::cat(Category));
cl::opt<bool> SynthOverlap("overlap", cl::desc("Allow F&B overlap pairs, costed as the cost model's pair (FB, sub-ops)"), cl::sub(SynthCmd),
                           cl::cat(Category));
cl::opt<bool> SynthNoSplit("no-split", cl::desc("Keep every backward whole (no I/W split)"),
                           cl::sub(SynthCmd), cl::cat(Category));
cl::opt<uint64_t> SynthSeed("seed", cl::desc("Seed of the search"), cl::init(1),
                            cl::sub(SynthCmd), cl::cat(Category));
cl::opt<double> SynthTime("time", cl::desc("Stop the search after this many seconds"),
                          cl::value_desc("SECONDS"), cl::init(60), cl::sub(SynthCmd),
                          cl::cat(Category));
cl::opt<uint64_t> SynthIterations("iterations", cl::desc("Local-search moves to try (the deterministic budget)"),
                                  cl::init(50000), cl::sub(SynthCmd), cl::cat(Category));
cl::opt<bool> SynthExact("exact", cl::desc("Search for a proven optimal schedule (small sizes; --time bounds it)"),
                         cl::sub(SynthCmd), cl::cat(Category));
cl::opt<std::string> SynthOutput("o", cl::desc("Output file (default: standard output)"),
                                 cl::value_desc("file.pipe"), cl::init("-"), cl::sub(SynthCmd),
                                 cl::cat(Category));

// --- usage errors ----------------------------------------------------------------
// Each prints "pipec: error: ..." and returns false; the caller exits with status 2.

bool usage(const Twine &message) {
  errs() << "pipec: error: " << message << "\n";
  return false;
}

// Two options (or an option and a mode) of which one would be silently ignored.
bool conflict(StringRef first, StringRef second, StringRef why) {
  return usage(first + " and " + second + " cannot be used together: " + why);
}

bool given(const cl::Option &option) { return option.getNumOccurrences() > 0; }

// The first of `options` given on the command line, or null.
const cl::Option *firstGiven(std::initializer_list<const cl::Option *> options) {
  for (const cl::Option *option : options)
    if (given(*option))
      return option;
  return nullptr;
}

std::string spelling(const cl::Option &option) {
  return (option.ArgStr.size() == 1 ? "-" : "--") + option.ArgStr.str();
}

// A path option given as '' would otherwise mean "write nothing".
bool requirePath(const cl::opt<std::string> &option) {
  if (given(option) && option.empty())
    return usage(spelling(option) + " expects a file name, got ''");
  return true;
}

StringRef formatName(pipec::DiagFormat format) {
  switch (format) {
  case pipec::DiagFormat::Text: return "text";
  case pipec::DiagFormat::Json: return "json";
  case pipec::DiagFormat::Sarif: return "sarif";
  case pipec::DiagFormat::Github: return "github";
  }
  return "text";
}

StringRef targetName(pipec::EmitTarget target) {
  switch (target) {
  case pipec::EmitTarget::IR: return "ir";
  case pipec::EmitTarget::AST: return "ast";
  case pipec::EmitTarget::TorchCsv: return "torch-csv";
  case pipec::EmitTarget::Cpu: return "cpu";
  case pipec::EmitTarget::Cuda: return "cuda";
  case pipec::EmitTarget::Json: return "json";
  }
  return "ir";
}

// The first cost option given, or empty.
std::string costOption() {
  if (given(CostsFile))
    return "--costs";
  return given(CostFlags) ? "--cost" : "";
}

// --- the check options, read once for every subcommand ----------------------------

// Parses -D NAME=V, NAME=v1,v2,... and NAME=A..B; a malformed one, or two for
// one name, is a usage error. Only check takes several values for a name.
bool parseDefines(pipec::CommonArgs &args) {
  StringMap<std::string> seen;
  for (const std::string &written : Defines) {
    StringRef text = written;
    int kind = pipec::stripKindPrefix(text);
    if (kind == 2)
      return usage("-D " + written + ": -D sets schedule parameters; set a cost with --cost " +
                   text.str());
    std::string define = text.str();
    pipec::ParamDefine parsed;
    std::string error = pipec::parseParamDefine(define, parsed);
    if (!error.empty())
      return usage(error);
    auto [previous, first] = seen.try_emplace(parsed.name, define);
    if (!first)
      return usage("-D " + previous->second + " and -D " + define + " both set " + parsed.name);
    if (!parsed.single() && !CheckCmd)
      return usage("-D " + define + " gives several values; only 'pipec check' checks a domain " +
                   (SimCmd ? "(sim --sweep NAME=v1,v2,... simulates several)"
                           : "(give one value)"));
    if (parsed.single())
      args.elab.defines.emplace_back(parsed.name, parsed.values.front());
    args.elab.flagNames.push_back({parsed.name, "-D " + written, false, kind == 1});
    args.defines.push_back(std::move(parsed));
  }
  return true;
}

// Reads --costs then --cost.
bool parseCosts(std::vector<pipec::CostOverride> &costs,
                std::vector<pipec::FlagName> &names) {
  if (!requirePath(CostsFile))
    return false;
  std::string error;
  if (given(CostsFile)) {
    auto fromFile = pipec::readCostsFile(CostsFile, error);
    if (!fromFile)
      return usage("--costs: " + error);
    costs = *fromFile;
  }
  for (const std::string &written : CostFlags) {
    StringRef flag = written;
    int kind = pipec::stripKindPrefix(flag);
    if (kind == 1)
      return usage("--cost " + written + ": --cost sets costs; set a parameter with -D " +
                   flag.str());
    auto cost = pipec::parseCostOverride(flag, error);
    if (!cost)
      return usage("--cost: " + error);
    names.push_back({cost->name, "--cost " + written, true, kind == 2});
    costs.push_back(*cost);
  }
  return true;
}

bool readCheckOptions(pipec::CommonArgs &args) {
  if (std::string error; !readWarningFlags(args, error))
    return usage(error);
  args.timePasses = TimePasses;
  args.errorLimit = ErrorLimit;
  args.color = !NoColor && sys::Process::StandardErrHasColors();
  args.format = Format; // text for sim, whose --format is its results'
  if (given(MaxActivations)) // absent: no limit
    args.checks.maxActivations =
        int64_t(std::min<uint64_t>(MaxActivations, std::numeric_limits<int64_t>::max()));
  args.elab.limits.maxOps = MaxOps;
  args.elab.limits.maxIterations = MaxIterations;
  if (!parseDefines(args) || !parseCosts(args.costs, args.elab.flagNames))
    return false;
  args.checks.costs = args.costs; // the memory check and --explain see the same costs
  return true;
}

// --- what each subcommand accepts together ---------------------------------------

bool validateCheck(const pipec::CommonArgs &args) {
  if (Explain && args.format != pipec::DiagFormat::Text)
    return conflict("--explain", "--format " + formatName(args.format).str(),
                    "the explanation is text on standard output, where the document goes");
  return true;
}

bool validateEmit(const pipec::CommonArgs &args) {
  if (!requirePath(Output))
    return false;
  std::string target = "--target " + targetName(Target).str();
  bool program = Target == pipec::EmitTarget::Cpu || Target == pipec::EmitTarget::Cuda ||
                 Target == pipec::EmitTarget::Json;
  if (given(MaxActivations) && !program)
    return conflict("--max-activations", target,
                    "only --target cpu, cuda and json run the checks");
  if (Target == pipec::EmitTarget::AST) // (cl::list overloads &)
    if (const cl::Option *option =
            firstGiven({std::addressof(Defines), &MaxOps, &MaxIterations}))
      return conflict(spelling(*option), target,
                      "the syntax tree is written before the schedule is elaborated");
  if (!costOption().empty() && Target != pipec::EmitTarget::Cuda)
    return conflict(costOption(), target,
                    "only --target cuda uses costs (for its overlap plans)");
  if (args.format != pipec::DiagFormat::Text && Output == "-")
    return conflict("--format " + formatName(args.format).str(), "-o - (the default)",
                    "both would go to standard output; write the output elsewhere with -o FILE");
  return true;
}

bool validateBuild() {
  if (!requirePath(BuildOutput) || !requirePath(KeepSource))
    return false;
  // The kept source's path reaches the compiler's line markers, where a newline
  // would start a preprocessor directive.
  if (pipec::commentSafe(KeepSource) != KeepSource)
    return usage("--keep-source expects a directory name without control characters");
  if (!costOption().empty() && BuildBackend != pipec::BuildTarget::Cuda)
    return conflict(costOption(), "--target cpu",
                    "only --target cuda uses costs (for its overlap plans)");
  if (given(StageSources) && BuildBackend == pipec::BuildTarget::Cuda)
    return conflict("--stage-source", "--target cuda", "user stages run on the CPU runtime");
  for (const std::string &source : StageSources)
    if (source.empty() || pipec::commentSafe(source) != source)
      return usage("--stage-source expects a file name without control characters");
  if (Stages == StageLibrary::TorchScript && BuildBackend != pipec::BuildTarget::Cpu)
    return conflict("--stages torchscript", "--target cuda", "torch stages run in CPU programs only");
  return true;
}

// --samples (when given) and --seed, checked.
bool samplesAndSeed(size_t &samples, uint64_t &seed) {
  if (given(Samples) && (Samples < 1 || Samples > pipec::kMaxSamples))
    return usage("--samples expects 1 to " + std::to_string(pipec::kMaxSamples) + ", got " +
                 std::to_string(Samples));
  if (Seed > uint64_t(INT64_MAX))
    return usage("--seed expects 0 to " + std::to_string(INT64_MAX));
  if (given(Samples))
    samples = Samples;
  seed = Seed;
  return true;
}

// plan --rank-by mean|p99 with --jitter, --samples, --seed (driver/PlanRanking.h).
bool parsePlanRanking(pipec::PlanArgs &plan) {
  if (given(Jitter)) {
    std::string error;
    std::optional<pipec::JitterSpec> jitter = pipec::parseJitter(Jitter, error);
    if (!jitter)
      return usage(error);
    plan.jitter = *jitter;
  }
  if (!given(RankBy)) {
    if (const cl::Option *option = firstGiven({&Jitter, &Samples, &Seed}))
      return usage(spelling(*option) + " needs --rank-by mean|p99 in plan");
    return true;
  }
  if (!given(Jitter))
    return usage("plan --rank-by needs --jitter (the planner's own order is by the "
                 "deterministic step time)");
  if (PlanFormat == SimFormat::Json)
    return conflict("--rank-by", "--format json", "the re-ranking is printed as text");
  plan.rankBy = RankBy == RankByOption::P99 ? pipec::RankByStat::P99 : pipec::RankByStat::Mean;
  return samplesAndSeed(plan.samples, plan.seed);
}

// Reads --jitter, --samples, --seed, --threads, --slow, --sensitivity, --topology
// and --rank-by.
bool parseConditions(pipec::SimArgs &sim) {
  if (given(Jitter)) {
    std::string error;
    std::optional<pipec::JitterSpec> jitter = pipec::parseJitter(Jitter, error);
    if (!jitter)
      return usage(error);
    sim.jitter = *jitter;
  } else if (const cl::Option *option = firstGiven({&Samples, &Seed}))
    return usage(spelling(*option) + " needs --jitter (without it every run is the same)");
  if (!samplesAndSeed(sim.samples, sim.seed))
    return false;
  sim.threads = SimThreads;
  for (const std::string &entry : Slow) {
    auto [rankText, factorText] = StringRef(entry).split('=');
    unsigned long long rank;
    double factor;
    if (rankText.trim().getAsInteger(10, rank) || rank > (1ull << 31) ||
        factorText.trim().getAsDouble(factor) || !std::isfinite(factor) || factor <= 0)
      return usage("--slow expects RANK=FACTOR, a rank number and a finite factor above 0 "
                   "(1.1: 10% slower), got '" + entry + "'");
    for (const auto &seen : sim.slow)
      if (seen.first == int64_t(rank))
        return usage("--slow names rank " + std::to_string(rank) + " twice");
    sim.slow.emplace_back(int64_t(rank), factor);
  }
  sim.sensitivity = Sensitivity;
  sim.topology = TopologyFile;
  if (given(TopologyFile) && TopologyFile.empty())
    return usage("--topology expects a cluster file or a preset (h100, h800, h200)");
  using RankByMode = pipec::SimArgs::RankBy;
  sim.rankBy = RankBy == RankByOption::Mean ? RankByMode::Mean
               : RankBy == RankByOption::P99 ? RankByMode::P99
                                             : RankByMode::Order;
  if (RankBy == RankByOption::P99 && !sim.jitter.active())
    return usage("--rank-by p99 needs --jitter (without it every percentile is the makespan)");
  bool table = Compare || given(Sweep) || SimFiles.size() > 1;
  if (given(RankBy) && !table)
    return usage("--rank-by orders a table: use it with --compare, --sweep or several files");
  return true;
}

// Reads --sweep and the output options.
bool parseSimArgs(pipec::SimArgs &sim, std::vector<pipec::FlagName> &names) {
  if (!requirePath(SvgPath) || !requirePath(TracePath))
    return false;
  if (given(Sweep)) {
    StringRef swept = Sweep;
    int kind = pipec::stripKindPrefix(swept);
    auto [name, values] = swept.split('=');
    SmallVector<StringRef, 8> parts;
    values.split(parts, ',', -1, /*KeepEmpty=*/false);
    if (name.empty() || parts.empty())
      return usage("--sweep expects NAME=v1,v2,..., got '" + Sweep + "'");
    // A cost name (with or without [STAGE]) sweeps that cost; anything else is a
    // parameter. A name that is both is refused once the schedule is read, unless
    // a prefix said which (frontend/FlagNames.h).
    bool cost = kind ? kind == 2 : pipec::isKnownCost(name.split('[').first);
    names.push_back({name.split('[').first.str(), "--sweep " + Sweep, cost, kind != 0});
    for (StringRef part : parts) {
      std::string setting = (name + "=" + part.trim()).str();
      pipec::SimArgs::SweepPoint point{setting, {}, {}};
      if (cost) {
        std::string error;
        auto override = pipec::parseCostOverride(setting, error);
        if (!override)
          return usage("--sweep: " + error);
        override->origin = "--sweep '" + setting + "'";
        point.costs.push_back(*override);
      } else {
        long long value;
        if (part.trim().getAsInteger(10, value))
          return usage("--sweep expects integers for the parameter '" + name + "', got '" +
                       part.trim() + "' (only costs take non-integer values)");
        point.defines.emplace_back(name.str(), value);
      }
      sim.sweep.push_back(std::move(point));
    }
  }
  sim.compare = Compare;
  sim.json = SimResultFormat == SimFormat::Json;
  sim.timeline = Timeline;
  sim.svgPath = SvgPath;
  sim.tracePath = TracePath;
  if (!parseConditions(sim))
    return false;

  // A table (--compare, --sweep, several files) has one row per run: nothing
  // per-run to draw, and it is text only.
  std::string table = Compare          ? "--compare"
                      : given(Sweep)   ? "--sweep"
                      : SimFiles.size() > 1 ? "several input files"
                                            : "";
  if (!table.empty()) {
    // Under --jitter a table's SVG is the step-time distributions side by side.
    if (given(SvgPath) && !sim.jitter.active())
      return conflict("--svg", table,
                      "a comparison table has no timeline; simulate one schedule for it");
    if (const cl::Option *option = firstGiven({&Timeline, &TracePath}))
      return conflict(spelling(*option), table,
                      "a comparison table has no timeline; simulate one schedule for it");
    if (Sensitivity)
      return conflict("--sensitivity", table, "the sensitivity report is per schedule; "
                                              "simulate one schedule for it");
    if (sim.json)
      return conflict("--format json", table, "the comparison table is text only");
  }
  if (sim.json && sim.timeline)
    return conflict("--timeline", "--format json",
                    "the timeline would break the JSON document on standard output");
  return true;
}

bool validateImport() {
  if (given(ImportMicrobatches) && (ImportMicrobatches < 1 || ImportMicrobatches > pipec::kMaxMicrobatches))
    return usage("--microbatches expects a whole number from 1 to " +
                 std::to_string(pipec::kMaxMicrobatches) + ", got " +
                 std::to_string(ImportMicrobatches));
  return requirePath(ImportOutput);
}

// --- fmt and lsp --------------------------------------------------------------------
cl::SubCommand FmtCmd("fmt", "Print schedule files in the canonical layout");
cl::SubCommand LspCmd("lsp", "Run a Language Server on standard input and output");
cl::list<std::string> FmtFiles(cl::Positional, cl::OneOrMore, cl::desc("<file.pipe>..."),
                               cl::sub(FmtCmd));
cl::opt<bool> FmtInPlace("i", cl::desc("Rewrite the files in place"), cl::sub(FmtCmd),
                         cl::cat(Category));
cl::opt<bool> FmtCheck("check",
                       cl::desc("Print a diff and exit 1 if a file is not formatted"),
                       cl::sub(FmtCmd), cl::cat(Category));

cl::opt<uint64_t> LspMemoryBudget(
    "memory-budget",
    cl::desc("Bytes the analyses of all open documents may hold together, estimated "
             "(default: 768 MiB); the least recently edited are released first"),
    cl::value_desc("BYTES"), cl::init(pipec::limits::kLspMemoryBytes), cl::sub(LspCmd),
    cl::cat(Category));

int dispatchFmtOrLsp() {
  if (LspCmd)
    return pipec::runLsp(LspMemoryBudget);
  if (FmtInPlace && FmtCheck)
    return conflict("-i", "--check", "--check only reports"), pipec::kExitUsage;
  if (FmtInPlace && llvm::is_contained(FmtFiles, "-"))
    return usage("-i cannot rewrite standard input"), pipec::kExitUsage;
  return pipec::runFmt(FmtFiles, {FmtInPlace, FmtCheck, sys::Process::StandardErrHasColors()});
}

// "-1", "0.5": a number of seconds as the user wrote it, for messages.
std::string formatSeconds(double seconds) {
  std::ostringstream out;
  out << seconds;
  return out.str();
}

// Reads the planner's inputs; their files are read later, by the subcommand.
// plan needs them all; sim only with --model.
bool parseModelArgs(pipec::ModelArgs &model, bool required) {
  if (!requirePath(ModelFile) || !requirePath(ClusterName))
    return false;
  if (required && !given(ModelFile))
    return usage("plan needs --model (a Hugging Face config.json)");
  if (!given(ModelFile))
    if (const cl::Option *option = firstGiven({&ClusterName, &Gpus, &GlobalBatch, &SeqLen,
                                               &MicroBatchSize, &RecomputeMode, &ZeroStage,
                                               &TensorParallel, &ExpertParallel, &ContextParallel,
                                               &PrecisionMode, &AttentionMode, &GradFp32, &TpOverlap,
                                               &TpOverlapCfg, &EpOverlap, &FirstStageLayers, &LastStageLayers, &PipelineLayout,
                                               &MtpLayers}))
      return usage(spelling(*option) + " needs --model (a Hugging Face config.json)");
  auto positive = [](const cl::opt<int64_t> &option) {
    return !given(option) || option >= 1 ||
           usage(spelling(option) + " expects a whole number of at least 1, got " +
                 std::to_string(option));
  };
  if (!positive(Gpus) || !positive(GlobalBatch) || !positive(SeqLen) ||
      !positive(MicroBatchSize) || !positive(ExpertParallel) || !positive(TensorParallel) ||
      !positive(ContextParallel))
    return false;
  if (PrecisionMode != "bf16" && PrecisionMode != "fp8")
    return usage("--precision expects bf16 or fp8, got '" + PrecisionMode + "'");
  if (AttentionMode != "flash" && AttentionMode != "eager")
    return usage("--attention expects flash or eager, got '" + AttentionMode + "'");
  for (const cl::opt<int64_t> *option : {&FirstStageLayers, &LastStageLayers, &MtpLayers})
    if (given(*option) && *option < 0)
      return usage(spelling(*option) + " expects a whole number of at least 0, got " +
                   std::to_string(int64_t(*option)));
  if (RecomputeMode != "none" && RecomputeMode != "selective" && RecomputeMode != "full")
    return usage("--recompute expects none, selective or full, got '" + RecomputeMode + "'");
  if (given(RecomputeNumLayers) && RecomputeNumLayers < 1)
    return usage("--recompute-num-layers expects a whole number of at least 1, got " +
                 std::to_string(int64_t(RecomputeNumLayers)));
  if (given(RecomputeNumLayers) && RecomputeMode != "full")
    return usage("--recompute-num-layers needs --recompute full (Megatron's block method recomputes whole layers)");
  if (EpOverlap && RecomputeMode == "full")
    return usage("--ep-overlap cannot go with --recompute full (Megatron-Core refuses full recomputation with "
                 "overlap_moe_expert_parallel_comm)");
  if (ZeroStage < 0 || ZeroStage > 3)
    return usage("--zero expects 0, 1, 2 or 3, got " + std::to_string(ZeroStage));
  if (given(GlobalBatch) && MicroBatchSize > GlobalBatch)
    return usage("--micro-batch-size " + std::to_string(MicroBatchSize) +
                 " is larger than --global-batch " + std::to_string(GlobalBatch));
  model.model = ModelFile;
  model.cluster = ClusterName;
  model.gpus = Gpus;
  model.globalBatch = GlobalBatch;
  model.seqLen = SeqLen;
  model.microBatchSize = MicroBatchSize;
  model.recompute = RecomputeMode;
  model.recomputeLayers = RecomputeNumLayers;
  model.zero = ZeroStage;
  model.expertParallel = ExpertParallel;
  model.tensorParallel = TensorParallel;
  model.tpGiven = given(TensorParallel);
  model.cpGiven = given(ContextParallel);
  model.microBatchGiven = given(MicroBatchSize);
  model.recomputeGiven = given(RecomputeMode);
  model.zeroGiven = given(ZeroStage);
  model.contextParallel = ContextParallel;
  model.precision = PrecisionMode;
  model.attention = AttentionMode;
  model.gradFp32 = GradFp32;
  model.tpOverlap = TpOverlap || given(TpOverlapCfg);
  model.tpOverlapCfg = TpOverlapCfg;
  model.tpOverlapCfgGiven = given(TpOverlapCfg);
  model.epOverlap = EpOverlap;
  model.firstStageLayers = FirstStageLayers;
  model.lastStageLayers = LastStageLayers;
  model.pipelineLayout = PipelineLayout;
  model.mtpLayers = MtpLayers;
  return true;
}

// synth reads its own options (above) and takes the check and costs in its own way.
int runSynthCommand(int argc, char **argv) {
  if (!requirePath(SynthOutput))
    return pipec::kExitUsage;
  pipec::SynthArgs synth;
  synth.placement = SynthPlacement;
  synth.defines = SynthDefines;
  synth.costFlags = CostFlags;
  synth.costsFile = CostsFile;
  synth.output = SynthOutput;
  synth.budgetGiven = given(SynthBudget);
  synth.budget = SynthBudget;
  synth.overlap = SynthOverlap;
  synth.split = !SynthNoSplit;
  synth.seed = SynthSeed;
  synth.exact = SynthExact;
  synth.seconds = SynthTime;
  synth.iterations = SynthIterations;
  synth.commandLine = "pipec";
  for (int i = 1; i < argc; ++i)
    synth.commandLine += std::string(" ") + argv[i];
  return pipec::runSynth(synth);
}

// The last line of defence when memory runs out (the input cap keeps every input
// far below it): a clear error and the I/O status instead of an abort and a stack
// dump. Nothing here may allocate.
[[noreturn]] void outOfMemory() {
  std::fputs("pipec: error: out of memory; the input is too large for the memory available\n",
             stderr);
  std::_Exit(pipec::kExitUsage);
}

// A first argument that is not an option names a subcommand: one pipec does
// not have is a usage error whatever follows it (LLVM would take it for a
// positional argument and print the general help for `pipec nosuch --help`).
bool knownSubcommand(int argc, char **argv) {
  if (argc < 2 || argv[1][0] == '-')
    return true;
  StringRef name = argv[1];
  std::vector<std::string> known;
  for (cl::SubCommand *command : cl::getRegisteredSubcommands()) {
    if (command->getName() == name && !name.empty())
      return true;
    if (!command->getName().empty()) // not the top level
      known.push_back(command->getName().str());
  }
  llvm::sort(known);
  std::string names;
  for (const std::string &known1 : known)
    names += (names.empty() ? "" : ", ") + known1;
  return usage("unknown subcommand '" + pipec::commentSafe(name.str()) + "'; the subcommands are " +
               names + " (run 'pipec --help')");
}

// Parses the command line and runs the subcommand; returns the exit status.
int dispatch(int argc, char **argv) {
  cl::HideUnrelatedOptions(Category);
  cl::SetVersionPrinter([](raw_ostream &out) { out << "pipec " << PIPEC_VERSION << "\n"; });
  if (!knownSubcommand(argc, argv))
    return pipec::kExitUsage;
  if (!cl::ParseCommandLineOptions(argc, argv,
                                   "pipec: check, simulate and compile pipeline-parallel "
                                   "training schedules\n",
                                   &errs()))
    return pipec::kExitUsage;

  if (FmtCmd || LspCmd)
    return dispatchFmtOrLsp();
  pipec::CommonArgs args;
  if (SynthCmd)
    return runSynthCommand(argc, argv);
  if (ImportCmd) {
    args.color = sys::Process::StandardErrHasColors();
    args.format = Format;
    args.elab.limits.maxOps = MaxOps;
    args.errorLimit = ErrorLimit;
    if (std::string error; !readWarningFlags(args, error)) {
      usage(error);
      return pipec::kExitUsage;
    }
    if (!validateImport())
      return pipec::kExitUsage;
    return pipec::runImport(ImportFile, ImportOutput, ImportMicrobatches, args);
  }
  if (CalibrateCmd) {
    pipec::ModelArgs model;
    if (given(ModelFile) ? !parseModelArgs(model, /*required=*/false)
                         : !requirePath(ClusterName))
      return pipec::kExitUsage;
    model.cluster = ClusterName;
    model.gpus = Gpus;
    if (!requirePath(CalibrateOutput) || !requirePath(CalibrateSchedule) ||
        !requirePath(CalibrateSweep) || !requirePath(CalibrateProgramTrace))
      return pipec::kExitUsage;
    pipec::CalibrateArgs calibrate;
    calibrate.kineto = CalibrateKineto;
    calibrate.sweep = CalibrateSweep;
    calibrate.programTrace = CalibrateProgramTrace;
    calibrate.schedule = CalibrateSchedule;
    calibrate.output = CalibrateOutput;
    for (const std::string &define : CalibrateDefines) {
      auto [name, value] = StringRef(define).split('=');
      int64_t number;
      if (name.empty() || value.getAsInteger(10, number)) {
        usage("-D expects NAME=VALUE with an integer value, got '" + define + "'");
        return pipec::kExitUsage;
      }
      calibrate.defines.emplace_back(name.str(), number);
    }
    return pipec::runCalibrate(calibrate, model);
  }
  if (PlanCmd) {
    pipec::ModelArgs model;
    if (!parseModelArgs(model, /*required=*/true))
      return pipec::kExitUsage;
    pipec::PlanArgs plan;
    plan.files = PlanFiles;
    plan.json = PlanFormat == SimFormat::Json;
    plan.threads = PlanThreads;
    plan.rows = PlanRows;
    if (!std::isfinite(PlanTime) || PlanTime < 0) {
      usage("--time expects a number of seconds of at least 0, got " + formatSeconds(PlanTime));
      return pipec::kExitUsage;
    }
    plan.timeBudget = PlanTime;
    if (!parsePlanRanking(plan))
      return pipec::kExitUsage;
    return pipec::runPlan(plan, model, args);
  }
  if (!CheckCmd && !EmitCmd && !SimCmd && !BuildCmd) {
    errs() << "pipec: error: no subcommand given; run 'pipec --help'\n";
    return pipec::kExitUsage;
  }
  if (!readCheckOptions(args))
    return pipec::kExitUsage;

  if (CheckCmd) {
    args.explain = Explain;
    args.jobs = Jobs;
    args.failFast = FailFast;
    args.maxPoints = MaxPoints;
    if (!validateCheck(args))
      return pipec::kExitUsage;
    return pipec::runCheck(CheckFiles, args);
  }
  if (EmitCmd) {
    if (!validateEmit(args))
      return pipec::kExitUsage;
    return pipec::runEmit(ScheduleFile, Target, Output, args);
  }
  if (SimCmd) {
    pipec::SimArgs sim;
    if (!parseSimArgs(sim, args.elab.flagNames) ||
        !parseModelArgs(sim.model, /*required=*/false))
      return pipec::kExitUsage;
    return pipec::runSim(SimFiles, sim, args);
  }
  if (!validateBuild())
    return pipec::kExitUsage;
  pipec::BuildArgs build{BuildBackend, BuildOutput, KeepSource, Stages == StageLibrary::TorchScript};
  build.stageSources = StageSources;
  return pipec::runBuild(ScheduleFile, build, args);
}

// A report, document or table that could not be written in full (a closed pipe,
// a full disk) is an I/O error, not a crash: LLVM would abort on the unchecked
// error when standard output is destroyed.
int checkStandardOutput(int status) {
  outs().flush();
  if (!outs().has_error())
    return status;
  errs() << "pipec: error: cannot write standard output: " << outs().error().message() << "\n";
  outs().clear_error();
  return pipec::kExitUsage;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  // Standard output closed by its reader (`pipec emit ... | head`): an I/O error,
  // exit status 2 as documented, without a message (no one is reading), rather
  // than LLVM's default of 74.
  sys::SetOneShotPipeSignalFunction([] { std::_Exit(pipec::kExitUsage); });
  pipec::registerTorchCsvInput(); // `pipec check FILE.csv` reads it as import would
  std::set_new_handler(outOfMemory);
  install_bad_alloc_error_handler([](void *, const char *, bool) { outOfMemory(); });
  return checkStandardOutput(dispatch(argc, argv));
}
