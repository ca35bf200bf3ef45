// The pipec subcommands. Each takes parsed arguments and returns the exit status:
// 0 clean, 1 errors (or warnings under --werror), 2 usage or I/O errors.
#pragma once

#include "check/Checks.h"
#include "elab/Elaborator.h"
#include "cost/CostInput.h"

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
  bool timePasses = false;
  bool color = false;
  unsigned errorLimit = 20; // --error-limit: errors shown before stopping, 0 = all
  // --costs FILE then --cost NAME=V, in order: the memory check, the simulator and
  // the overlap plans of `emit/build --target cuda`.
  std::vector<CostOverride> costs;
};

enum class EmitTarget { IR, AST, TorchCsv, Cpu, Cuda };

struct SimArgs {
  bool compare = false;
  bool json = false; // --format json: the results as one JSON document
  std::string sweepName;           // --sweep NAME=v1,v2,...
  std::vector<int64_t> sweepValues;
  bool timeline = false;
  std::string svgPath, tracePath;
};

int runSim(const std::vector<std::string> &files, const SimArgs &sim, const CommonArgs &args);
int runCheck(const std::vector<std::string> &files, const CommonArgs &args);
int runEmit(const std::string &file, EmitTarget target, const std::string &output,
            const CommonArgs &args);
int runImport(const std::string &file, const std::string &output, const CommonArgs &args);

enum class BuildTarget { Cpu, Cuda };

struct BuildArgs {
  BuildTarget target = BuildTarget::Cpu;
  std::string output;     // -o EXE
  std::string keepSource; // --keep-source DIR: write the generated C++ there and keep it
};

int runBuild(const std::string &file, const BuildArgs &build, const CommonArgs &args);

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
};

int runSynth(const SynthArgs &args);

} // namespace pipec
