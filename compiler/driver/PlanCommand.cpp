// `pipec plan`: ranks the schedules of the library (or those named) on a
// model, a cluster and a training setup, by simulated step time among the
// layouts that fit in memory; when none fits, says which change would. One
// schedule cache serves the plan and every remedy's re-plan, and one time
// budget (--time) bounds them together.
#include "driver/Commands.h"
#include "driver/PlanRanking.h"
#include "driver/PlanSetup.h"
#include "plan/EpOverlap.h"

#include "plan/PlanReport.h"
#include "plan/ScheduleCache.h"
#include "support/NumberText.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <chrono>

namespace pipec {

int runPlan(const PlanArgs &args, const ModelArgs &model, const CommonArgs &common) {
  auto start = std::chrono::steady_clock::now();
  plan::PlanInputs inputs;
  std::string error;
  if (!loadPlanInputs(model, inputs, error)) {
    llvm::errs() << "pipec: error: " << error << "\n";
    return kExitUsage;
  }
  inputs.schedules = args.files;
  if (inputs.schedules.empty()) {
    inputs.schedules = libraryFiles(error);
    // --ep-overlap over the library: the schedules Megatron overlaps in (those
    // with an ep_overlap/ form); a named schedule without one is an error.
    if (inputs.training.epCommOverlap)
      llvm::erase_if(inputs.schedules, [](const std::string &file) {
        std::string why;
        return !plan::epOverlapSchedule(file, why);
      });
  }
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
  inputs.search = planSearch(model, inputs);
  inputs.search.keep = args.rows;
  inputs.search.timeBudgetSeconds = args.timeBudget;
  inputs.search.rankBy = plan::RankBy::StepTime; // --rank-by mean|p99 re-ranks afterwards (PlanRanking.h)

  plan::ScheduleCache cache;
  plan::PlanResult result = plan::makePlan(inputs, &cache);
  for (const std::string &problem : result.errors)
    llvm::errs() << "pipec: error: " << problem << "\n";
  if (!result.errors.empty())
    return kExitErrors;
  std::vector<CandidateSpread> spreads; // --rank-by: re-ranked under jitter
  size_t notJittered = 0;
  auto deadline = args.timeBudget > 0
                      ? start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(args.timeBudget))
                      : std::chrono::steady_clock::time_point::max();
  if (args.rankBy != RankByStat::Order &&
      !rankByVariability(args, inputs, result, spreads, error, deadline, &notJittered)) {
    llvm::errs() << "pipec: error: --rank-by: " << error << "\n";
    return kExitErrors;
  }
  if (notJittered)
    llvm::errs() << "pipec: warning: --rank-by stopped at the time budget (--time "
                 << fmt::format("{:g}", args.timeBudget) << "): " << notJittered
                 << " fitting candidates keep their deterministic order\n";
  if (args.json)
    plan::printPlanJson(inputs, result, llvm::outs());
  else
    plan::printPlanText(inputs, result, llvm::outs(), args.rows);
  if (!spreads.empty())
    printSpreads(args, result, spreads, llvm::outs());
  if (result.timedOut)
    llvm::errs() << "pipec: warning: the search stopped at its time budget (--time "
                 << formatSignificant(args.timeBudget, 6) << "): " << result.notReached
                 << " layouts were not evaluated\n";
  if (result.recommended)
    return kExitClean;
  if (result.candidates.empty() && result.nonFinite > 0) {
    const plan::Cluster &c = inputs.cluster;
    llvm::errs() << fmt::format("pipec: error: the costs of {} layouts are not finite: the "
                                "cluster's numbers are out of range (peak_flops {:g} FLOP/s, "
                                "intra_node_bandwidth {:g} B/s, inter_node_bandwidth {:g} B/s)\n",
                                result.nonFinite, c.peakFlops, c.intraNodeBandwidth,
                                c.interNodeBandwidth);
    return kExitErrors;
  }
  if (result.candidates.empty() && result.timedOut) {
    llvm::errs() << "pipec: error: the time budget (--time " << formatSignificant(args.timeBudget, 6)
                 << " s) ran out before a layout was evaluated; raise --time\n";
    return kExitErrors;
  }
  if (result.candidates.empty() && result.overOps > 0 && result.overOps == result.layouts)
    llvm::errs() << "pipec: error: every layout of " << inputs.cluster.gpus
                 << " GPUs needs more ops than --max-ops allows (at least 2 x stages x M; M = "
                    "global batch / (dp x micro-batch)); lower --global-batch or raise --max-ops\n";
  else if (result.candidates.empty())
    llvm::errs() << "pipec: error: no layout of " << inputs.cluster.gpus
                 << " GPUs suits these schedules (P must divide the GPUs, M = global batch / "
                    "(dp x micro-batch) must be whole and meet each schedule's requirements)\n";
  else
    llvm::errs() << "pipec: error: no candidate fits in "
                 << formatGigabytes(inputs.cluster.memoryBytes) << " GB per GPU\n";
  // The remedies share the cache and what is left of the budget.
  if (args.timeBudget > 0) {
    double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    inputs.search.timeBudgetSeconds = std::max(1e-3, args.timeBudget - spent);
  }
  plan::printRemedies(plan::findRemedies(inputs, &cache), args.json ? llvm::errs() : llvm::outs());
  return kExitErrors;
}

} // namespace pipec
