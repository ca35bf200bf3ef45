// runChecks: the list of checks, in order. A check that relies on an earlier
// one's guarantee (communication needs complete coverage and a consistent order
// on each rank) runs only when that one passed.
#include "check/Checks.h"

#include "check/CheckPasses.h"
#include "cost/CostChecks.h"

namespace pipec {

CheckReport runChecks(const ScheduleIR &ir, const CheckOptions &options, DiagnosticEngine &diags) {
  CheckReport report;
  bool ok = checkParameterCopies(ir, diags, report.syncGroups);
  {
    // The op index is only needed up to the communication plan: released before
    // the later checks (and the simulation) so it never adds to the peak.
    OpIndex index;
    bool covered = checkCoverage(ir, diags, index);
    ok &= covered;
    bool paired = covered && checkMemoryOpPairs(ir, index, diags);
    if (paired && checkDependencies(ir, index, diags)) {
      std::vector<OpRef>().swap(index.weight); // messages need forwards and backwards only
      report.comm = deriveCommPlan(ir, index);
    } else {
      ok = false;
    }
  }
  if (report.comm)
    ok &= checkCommunication(ir, *report.comm, diags);
  ok &= checkCosts(ir, options.costs, diags);
  ok &= checkMemory(ir, options, report.comm ? &*report.comm : nullptr, diags, report.memory);
  report.ok = ok;
  return report;
}

} // namespace pipec
