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
  bool covered = checkCoverage(ir, diags, report.index);
  ok &= covered;
  if (covered && checkDependencies(ir, report.index, diags)) {
    report.comm = deriveCommPlan(ir, report.index);
    ok &= checkCommunication(ir, *report.comm, diags);
  } else {
    ok = false;
  }
  ok &= checkCosts(ir, options.costs, diags);
  ok &= checkMemory(ir, options, diags, report.memory);
  report.ok = ok;
  return report;
}

} // namespace pipec
