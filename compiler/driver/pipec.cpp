// The pipec command line. This file only parses arguments and dispatches to a
// subcommand (Commands.h); it holds no compiler logic.
#include "driver/Commands.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace {

cl::SubCommand CheckCmd("check", "Check schedule files and report every problem");
cl::SubCommand EmitCmd("emit", "Write an intermediate form of a schedule");
cl::SubCommand SimCmd("sim", "Simulate schedules under a cost model");
cl::SubCommand ImportCmd("import", "Turn a schedule written by another tool into a .pipe file");
cl::SubCommand BuildCmd("build", "Compile a checked schedule into an executable");

cl::OptionCategory Category("pipec options");

cl::list<std::string> CheckFiles(cl::Positional, cl::OneOrMore, cl::desc("<file.pipe>..."),
                                 cl::sub(CheckCmd));
cl::list<std::string> SimFiles(cl::Positional, cl::OneOrMore, cl::desc("<file.pipe>..."),
                               cl::sub(SimCmd));
// Costs drive the simulator and the CUDA program's overlap plans.
cl::list<std::string> CostFlags("cost", cl::desc("Override a cost (repeatable)"),
                                cl::value_desc("NAME=V or NAME[STAGE]=V"), cl::sub(SimCmd),
                                cl::sub(EmitCmd), cl::sub(BuildCmd), cl::cat(Category));
cl::opt<std::string> CostsFile("costs", cl::desc("Read costs from a JSON object"),
                               cl::value_desc("file.json"), cl::sub(SimCmd), cl::sub(EmitCmd),
                               cl::sub(BuildCmd), cl::cat(Category));
cl::opt<bool> Compare("compare", cl::desc("One table row per schedule"), cl::sub(SimCmd),
                      cl::cat(Category));
cl::opt<std::string> Sweep("sweep", cl::desc("One row per value of a parameter"),
                           cl::value_desc("NAME=v1,v2,..."), cl::sub(SimCmd), cl::cat(Category));
cl::opt<bool> Timeline("timeline", cl::desc("Print an ASCII timeline"), cl::sub(SimCmd),
                       cl::cat(Category));
cl::opt<std::string> SvgPath("svg", cl::desc("Write the timeline as SVG"),
                             cl::value_desc("out.svg"), cl::sub(SimCmd), cl::cat(Category));
cl::opt<std::string> TracePath("trace", cl::desc("Write a Chrome/Perfetto trace"),
                               cl::value_desc("out.json"), cl::sub(SimCmd), cl::cat(Category));
cl::opt<std::string> EmitFile(cl::Positional, cl::Required, cl::desc("<file.pipe>"),
                              cl::sub(EmitCmd));
cl::opt<pipec::EmitTarget> Target(
    "target", cl::desc("What to write"), cl::Required, cl::sub(EmitCmd), cl::cat(Category),
    cl::values(clEnumValN(pipec::EmitTarget::IR, "ir", "elaborated ops, one line per rank"),
               clEnumValN(pipec::EmitTarget::AST, "ast", "the syntax tree with source locations"),
               clEnumValN(pipec::EmitTarget::TorchCsv, "torch-csv",
                          "PyTorch's compute-only schedule CSV, one row per rank"),
               clEnumValN(pipec::EmitTarget::Cpu, "cpu",
                          "a C++ program for the CPU runtime (runs the checks first)"),
               clEnumValN(pipec::EmitTarget::Cuda, "cuda",
                          "a CUDA stream program over NCCL (runs the checks first)")));
cl::opt<std::string> Output("o", cl::desc("Output file (default: standard output)"),
                            cl::value_desc("file"), cl::init("-"), cl::sub(EmitCmd),
                            cl::cat(Category));

cl::opt<std::string> BuildFile(cl::Positional, cl::Required, cl::desc("<file.pipe>"),
                               cl::sub(BuildCmd));
cl::opt<pipec::BuildTarget> BuildBackend(
    "target", cl::desc("The backend"), cl::Required, cl::sub(BuildCmd), cl::cat(Category),
    cl::values(clEnumValN(pipec::BuildTarget::Cpu, "cpu", "ranks are threads of one process"),
               clEnumValN(pipec::BuildTarget::Cuda, "cuda", "CUDA streams over NCCL, one GPU per rank, or all ranks on one GPU")));
cl::opt<std::string> BuildOutput("o", cl::desc("The executable to write"), cl::Required,
                                 cl::value_desc("exe"), cl::sub(BuildCmd), cl::cat(Category));
cl::opt<std::string> KeepSource("keep-source",
                                cl::desc("Write the generated C++ into DIR and keep it"),
                                cl::value_desc("dir"), cl::sub(BuildCmd), cl::cat(Category));

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
cl::opt<pipec::DiagFormat> ImportFormat(
    "format", cl::desc("How to print diagnostics"), cl::init(pipec::DiagFormat::Text),
    cl::sub(ImportCmd), cl::cat(Category),
    cl::values(clEnumValN(pipec::DiagFormat::Text, "text", "clang-style text on stderr"),
               clEnumValN(pipec::DiagFormat::Json, "json", "one JSON document on stdout"),
               clEnumValN(pipec::DiagFormat::Sarif, "sarif", "SARIF 2.1.0 on stdout"),
               clEnumValN(pipec::DiagFormat::Github, "github",
                          "GitHub workflow annotations on stdout")));

cl::list<std::string> Defines("D", cl::Prefix, cl::desc("Set a schedule parameter"),
                              cl::value_desc("NAME=VALUE"), cl::sub(CheckCmd), cl::sub(EmitCmd),
                              cl::sub(SimCmd), cl::sub(BuildCmd), cl::cat(Category));
cl::opt<pipec::DiagFormat> Format(
    "format", cl::desc("How to print diagnostics"), cl::init(pipec::DiagFormat::Text),
    cl::sub(CheckCmd), cl::sub(SimCmd), cl::cat(Category),
    cl::values(clEnumValN(pipec::DiagFormat::Text, "text", "clang-style text on stderr"),
               clEnumValN(pipec::DiagFormat::Json, "json", "one JSON document on stdout"),
               clEnumValN(pipec::DiagFormat::Sarif, "sarif", "SARIF 2.1.0 on stdout"),
               clEnumValN(pipec::DiagFormat::Github, "github",
                          "GitHub workflow annotations on stdout")));
cl::opt<bool> Explain("explain",
                      cl::desc("Describe placement, gradient-sync groups, memory and messages"),
                      cl::sub(CheckCmd), cl::cat(Category));
cl::opt<int64_t> MaxActivations(
    "max-activations", cl::desc("Error when a rank holds more micro-batches' activations"),
    cl::init(-1), cl::sub(CheckCmd), cl::cat(Category));
cl::opt<bool> Werror("werror", cl::desc("Treat warnings as errors"), cl::sub(CheckCmd),
                     cl::sub(EmitCmd), cl::sub(SimCmd), cl::cat(Category));
cl::opt<bool> TimePasses("time-passes", cl::desc("Print the time each phase takes"),
                         cl::sub(CheckCmd), cl::sub(EmitCmd), cl::sub(SimCmd), cl::cat(Category));
cl::opt<bool> NoColor("no-color", cl::desc("Never color diagnostics"), cl::sub(CheckCmd),
                      cl::sub(EmitCmd), cl::sub(SimCmd), cl::cat(Category));
cl::opt<uint64_t> MaxOps("max-ops", cl::desc("Refuse schedules with more ops than this"),
                         cl::init(pipec::ElabLimits().maxOps), cl::sub(CheckCmd),
                         cl::sub(EmitCmd), cl::sub(SimCmd), cl::sub(ImportCmd),
                         cl::cat(Category));
cl::opt<uint64_t> MaxIterations("max-iterations",
                                cl::desc("Refuse schedules whose loops run more iterations"),
                                cl::init(pipec::ElabLimits().maxIterations), cl::sub(CheckCmd),
                                cl::sub(EmitCmd), cl::sub(SimCmd), cl::cat(Category));

// Parses -D NAME=VALUE; prints a usage error and returns false when malformed.
bool parseDefines(pipec::ElabOptions &options) {
  for (const std::string &define : Defines) {
    auto [name, value] = StringRef(define).split('=');
    long long number;
    bool validName = !name.empty() && (isalpha(name[0]) || name[0] == '_') &&
                     name.find_if_not([](char c) { return isalnum(c) || c == '_'; }) ==
                         StringRef::npos;
    if (!validName || value.empty() || value.getAsInteger(10, number)) {
      errs() << "pipec: error: -D expects NAME=INTEGER, got '" << define << "'\n";
      return false;
    }
    options.defines.emplace_back(name.str(), number);
  }
  return true;
}

// Reads --costs then --cost; prints a usage error and returns false when malformed.
bool parseCosts(std::vector<pipec::CostOverride> &costs) {
  std::string error;
  if (!CostsFile.empty()) {
    auto fromFile = pipec::readCostsFile(CostsFile, error);
    if (!fromFile) {
      errs() << "pipec: error: --costs: " << error << "\n";
      return false;
    }
    costs = *fromFile;
  }
  for (const std::string &flag : CostFlags) {
    auto cost = pipec::parseCostOverride(flag, error);
    if (!cost) {
      errs() << "pipec: error: --cost: " << error << "\n";
      return false;
    }
    costs.push_back(*cost);
  }
  return true;
}

// Reads --sweep and the output options; prints a usage error and returns false when malformed.
bool parseSimArgs(pipec::SimArgs &sim, const pipec::CommonArgs &args) {
  if (!Sweep.empty()) {
    auto [name, values] = StringRef(Sweep).split('=');
    SmallVector<StringRef, 8> parts;
    values.split(parts, ',', -1, /*KeepEmpty=*/false);
    for (StringRef part : parts) {
      long long value;
      if (part.trim().getAsInteger(10, value)) {
        errs() << "pipec: error: --sweep expects NAME=v1,v2,... with integers, got '" << Sweep
               << "'\n";
        return false;
      }
      sim.sweepValues.push_back(value);
    }
    if (name.empty() || sim.sweepValues.empty()) {
      errs() << "pipec: error: --sweep expects NAME=v1,v2,..., got '" << Sweep << "'\n";
      return false;
    }
    sim.sweepName = name.str();
  }
  if (args.format == pipec::DiagFormat::Sarif || args.format == pipec::DiagFormat::Github) {
    errs() << "pipec: error: sim prints --format text or json\n";
    return false;
  }
  sim.compare = Compare;
  sim.timeline = Timeline;
  sim.svgPath = SvgPath;
  sim.tracePath = TracePath;
  return true;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(Category);
  cl::SetVersionPrinter([](raw_ostream &out) { out << "pipec 0.1\n"; });
  if (!cl::ParseCommandLineOptions(argc, argv,
                                   "pipec: check, simulate and compile pipeline-parallel "
                                   "training schedules\n",
                                   &errs()))
    return pipec::kExitUsage;

  pipec::CommonArgs args;
  args.werror = Werror;
  args.timePasses = TimePasses;
  args.color = !NoColor && sys::Process::StandardErrHasColors();
  args.format = Format;
  args.explain = Explain;
  args.checks.maxActivations = MaxActivations;
  args.elab.limits.maxOps = MaxOps;
  args.elab.limits.maxIterations = MaxIterations;
  if (!parseDefines(args.elab) || !parseCosts(args.costs))
    return pipec::kExitUsage;

  if (CheckCmd)
    return pipec::runCheck(CheckFiles, args);
  if (EmitCmd)
    return pipec::runEmit(EmitFile, Target, Output, args);
  if (SimCmd) {
    pipec::SimArgs sim;
    if (!parseSimArgs(sim, args))
      return pipec::kExitUsage;
    return pipec::runSim(SimFiles, sim, args);
  }
  if (BuildCmd)
    return pipec::runBuild(BuildFile, {BuildBackend, BuildOutput, KeepSource}, args);
  if (ImportCmd) {
    args.format = ImportFormat;
    return pipec::runImport(ImportFile, ImportOutput, args);
  }
  errs() << "pipec: error: no subcommand given; run 'pipec --help'\n";
  return pipec::kExitUsage;
}
