// `pipec synth --placement FAMILY|FILE.pipe -D P=.. -D M=.. --max-activations N
// [--overlap] [-o OUT.pipe]`: searches for a schedule of the family (or of a
// file's placement) within the budget and writes it as a .pipe file. Bad flags are usage errors (exit 2); a budget nothing
// fits, or a result that pipec check would reject, is exit 1 with the reason.
// With --exact, the heuristic's result is then improved until proven optimal
// (or --time runs out), on the placements and ops its model has.
#include "driver/Commands.h"
#include "driver/Reporting.h"

#include "cost/CostInput.h"
#include "interop/PipeWriter.h"
#include "synth/ExactSynth.h"
#include "support/NumberText.h"
#include "synth/Synthesize.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>

namespace pipec {

namespace {

// Bounds that keep a search small: it re-simulates the whole schedule per move.
constexpr int64_t kMaxSynthRanks = 64, kMaxSynthMicrobatches = 512, kMaxSynthChunks = 8;
constexpr int64_t kMaxSynthOps = 60000;

int usage(const std::string &message) {
  llvm::errs() << "pipec synth: error: " << message << "\n";
  return kExitUsage;
}

bool parseFamily(llvm::StringRef name, synth::PlacementFamily &family) {
  if (name == "one") family = synth::PlacementFamily::One;
  else if (name == "interleaved") family = synth::PlacementFamily::Interleaved;
  else if (name == "v") family = synth::PlacementFamily::V;
  else if (name == "bidirectional") family = synth::PlacementFamily::Bidirectional;
  else if (name.endswith(".pipe")) family = synth::PlacementFamily::File;
  else return false;
  return true;
}

// --placement FILE.pipe: every -D is the file's (NAME=INTEGER, any name).
std::string readFileDefines(const SynthArgs &args, synth::SynthRequest &request) {
  for (const std::string &define : args.defines) {
    auto [name, value] = llvm::StringRef(define).split('=');
    long long number;
    if (name.empty() || value.empty() || value.getAsInteger(10, number))
      return "-D expects NAME=INTEGER, got '" + define + "'";
    for (const auto &[seen, previous] : request.defines)
      if (seen == name)
        return "-D " + name.str() + " is given twice (" + std::to_string(previous) + " and " +
               value.str() + ")";
    request.defines.emplace_back(name.str(), int64_t(number));
  }
  return "";
}

// -D P=, M= and v=, each an integer in [1, limit].
std::string readDefines(const SynthArgs &args, synth::SynthRequest &request, bool &haveP,
                        bool &haveM, bool &haveV) {
  for (const std::string &define : args.defines) {
    auto [name, value] = llvm::StringRef(define).split('=');
    long long number;
    if (value.empty() || value.getAsInteger(10, number))
      return "-D expects NAME=INTEGER, got '" + define + "'";
    int64_t limit = name == "P" ? kMaxSynthRanks : name == "M" ? kMaxSynthMicrobatches
                    : name == "v" ? kMaxSynthChunks : 0;
    bool &seen = name == "P" ? haveP : name == "M" ? haveM : haveV;
    if (!limit)
      return "-D " + name.str() + ": synth takes only P (ranks), M (micro-batches) and v "
             "(chunks per rank, interleaved)";
    if (seen)
      return "-D " + name.str() + " is given twice";
    if (number < 1 || number > limit)
      return "-D " + name.str() + " must be in 1.." + std::to_string(limit) + ", got " +
             value.str();
    seen = true;
    (name == "P" ? request.ranks : name == "M" ? request.microbatches : request.chunks) =
        int(number);
  }
  return "";
}

} // namespace

int runSynth(const SynthArgs &args) {
  synth::SynthRequest request;
  if (!parseFamily(args.placement, request.family))
    return usage("--placement expects one, interleaved, v, bidirectional or a FILE.pipe, got '" +
                 args.placement + "'");
  // --exact: its model has one copy of each stage, one flow, and runs single ops.
  if (args.exact && request.family == synth::PlacementFamily::Bidirectional)
    return usage("--exact does not support --placement bidirectional (two copies of each "
                 "stage); use one, interleaved or v, or drop --exact");
  if (args.exact && request.family == synth::PlacementFamily::File)
    return usage("--exact does not support a FILE.pipe placement; use one, interleaved or v, "
                 "or drop --exact");
  if (args.exact && args.overlap)
    return usage("--exact does not support --overlap (F&B pairs); drop one of them");
  bool fromFile = request.family == synth::PlacementFamily::File;
  bool haveP = false, haveM = false, haveV = false;
  std::string error = fromFile ? readFileDefines(args, request)
                               : readDefines(args, request, haveP, haveM, haveV);
  if (!error.empty())
    return usage(error);
  if (!fromFile && (!haveP || !haveM))
    return usage("-D P=N and -D M=N are required");
  if (!fromFile && haveV != (request.family == synth::PlacementFamily::Interleaved))
    return usage(haveV ? "-D v is only for --placement interleaved"
                       : "--placement interleaved needs -D v=N (chunks per rank)");
  if (haveV && request.chunks < 2)
    return usage("-D v must be at least 2 for --placement interleaved");
  if (request.family == synth::PlacementFamily::Bidirectional &&
      (request.microbatches < 2 || request.ranks < 2))
    return usage("--placement bidirectional needs -D P=N and -D M=N with N >= 2 (two ends, "
                 "one micro-batch per direction at least)");
  if (fromFile) {
    request.placementFile = args.placement;
    if (!llvm::sys::fs::exists(args.placement))
      return usage("--placement: cannot read '" + args.placement + "'");
  }
  request.overlap = args.overlap;
  if (!args.budgetGiven || args.budget < 1)
    return usage("--max-activations N (N >= 1) is required: the budget the schedule must fit");
  if (!(args.seconds > 0) || !std::isfinite(args.seconds) || args.seconds > 86400)
    return usage("--time expects seconds in (0, 86400]");
  int64_t chunks = request.family == synth::PlacementFamily::One ||
                           request.family == synth::PlacementFamily::Bidirectional ? 1
                   : request.family == synth::PlacementFamily::V ? 2
                                                                 : request.chunks;
  if (3 * chunks * request.ranks * request.microbatches > kMaxSynthOps)
    return usage("P * M * chunks is too large for a search (at most " +
                 std::to_string(kMaxSynthOps / 3) + " stage micro-batches)");
  // The exact search descends one level per op: keep it to sizes it can prove.
  constexpr int64_t kMaxExactStageMicrobatches = 1000;
  if (args.exact && chunks * request.ranks * request.microbatches > kMaxExactStageMicrobatches)
    return usage("--exact is for small problems: P * M * chunks must be at most " +
                 std::to_string(kMaxExactStageMicrobatches) + " stage micro-batches");
  if (args.output.empty())
    return usage("-o expects a file name, got ''");

  // Costs: --costs then --cost, as for check and sim.
  if (!args.costsFile.empty()) {
    auto fromFile = readCostsFile(args.costsFile, error);
    if (!fromFile)
      return usage("--costs: " + error);
    request.costs = *fromFile;
  }
  for (const std::string &flag : args.costFlags) {
    auto cost = parseCostOverride(flag, error);
    if (!cost)
      return usage("--cost: " + error);
    request.costs.push_back(*cost);
  }
  request.budget = int64_t(std::min<uint64_t>(args.budget, uint64_t(1) << 40));
  request.split = args.split;
  request.seed = args.seed;
  request.seconds = args.seconds;
  request.iterations = args.iterations;
  request.commandLine = escapeForComment(args.commandLine);

  auto progress = [](const std::string &line) { llvm::errs() << "pipec synth: " << line << "\n"; };
  synth::SynthOutcome outcome =
      args.exact ? synth::synthesizeExact(request, progress).synth : synthesize(request, progress);
  if (!outcome.ok) {
    llvm::errs() << outcome.error;
    if (!outcome.error.empty() && outcome.error.back() != '\n')
      llvm::errs() << "\n";
    return kExitErrors;
  }
  // Every number is finite here (synthesize refuses a makespan that is not); a
  // bound is printed only when one was proven (0: none).
  std::string bound = outcome.bound > 0 ? ", lower bound " + formatNumber(outcome.bound) +
                                              ", gap " + formatFixed(100 * outcome.gap(), 1) + "%"
                                        : "";
  llvm::errs() << "pipec synth: makespan " << formatNumber(outcome.makespan) << bound
               << ", peak activations " << outcome.peakActivations << ", "
               << formatFixed(outcome.seconds, 2) << " s\n";
  if (!writeOutputFile(args.output, [&](llvm::raw_ostream &out) { out << outcome.text; }))
    return kExitUsage;
  return kExitClean;
}

} // namespace pipec
