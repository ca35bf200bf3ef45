// `pipec plan`: ranks the schedules of the library (or those named) on a
// model, a cluster and a training setup, by simulated step time among the
// layouts that fit in memory; when none fits, says which change would.
#include "driver/Commands.h"
#include "driver/PlanRanking.h"
#include "driver/PlanSetup.h"

#include "plan/PlanReport.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

namespace pipec {

int runPlan(const PlanArgs &args, const ModelArgs &model, const CommonArgs &common) {
  plan::PlanInputs inputs;
  std::string error;
  if (!loadPlanInputs(model, inputs, error)) {
    llvm::errs() << "pipec: error: " << error << "\n";
    return kExitUsage;
  }
  inputs.schedules = args.files;
  if (inputs.schedules.empty())
    inputs.schedules = libraryFiles(error);
  if (inputs.schedules.empty()) {
    llvm::errs() << "pipec: error: " << error << "\n";
    return kExitUsage;
  }
  for (const std::string &file : inputs.schedules)
    if (!llvm::sys::fs::exists(file)) {
      llvm::errs() << "pipec: error: cannot read '" << file << "': No such file or directory\n";
      return kExitUsage;
    }
  inputs.limits = common.elab.limits;
  inputs.threads = args.threads;

  plan::PlanResult result = plan::makePlan(inputs);
  for (const std::string &problem : result.errors)
    llvm::errs() << "pipec: error: " << problem << "\n";
  if (!result.errors.empty())
    return kExitErrors;
  std::vector<CandidateSpread> spreads; // --rank-by: re-ranked under jitter
  if (args.rankBy != RankByStat::Order && !rankByVariability(args, inputs, result, spreads, error)) {
    llvm::errs() << "pipec: error: --rank-by: " << error << "\n";
    return kExitErrors;
  }
  if (args.json)
    plan::printPlanJson(inputs, result, llvm::outs());
  else
    plan::printPlanText(inputs, result, llvm::outs(), args.rows);
  if (!spreads.empty())
    printSpreads(args, result, spreads, llvm::outs());
  if (result.recommended)
    return kExitClean;
  if (result.candidates.empty())
    llvm::errs() << "pipec: error: no layout of " << inputs.cluster.gpus
                 << " GPUs suits these schedules (P must divide the GPUs, M = global batch / "
                    "(dp x micro-batch) must be whole and meet each schedule's requirements)\n";
  else
    llvm::errs() << "pipec: error: no candidate fits in "
                 << plan::formatGB(inputs.cluster.memoryBytes) << " GB per GPU\n";
  plan::printRemedies(plan::findRemedies(inputs), args.json ? llvm::errs() : llvm::outs());
  return kExitErrors;
}

} // namespace pipec
