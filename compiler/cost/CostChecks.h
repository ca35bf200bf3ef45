// Cost settings that cannot be used as given, reported before anything uses
// them: a per-stage setting from --cost / --costs for a stage that does not
// exist (an error, as in the schedule's own `costs { }` block), and settings
// that contradict each other (warnings; --werror makes them errors):
//  - sub-operation costs given for one direction of a stage only;
//  - one direction's sub-operation costs not summing to F (forward) or to B or I
//    (backward), so a pair is planned with other durations than a lone op;
//  - an explicit FB shorter than max(F, B) or longer than F + B;
//  - an explicit FB that differs from the pair the sub-operation costs plan;
//  - I + W different from B.
#pragma once

#include "cost/CostOverride.h"
#include "diag/Diagnostics.h"
#include "elab/ScheduleIR.h"

#include <vector>

namespace pipec {

// Returns false after reporting an error.
bool checkCosts(const ScheduleIR &ir, const std::vector<CostOverride> &overrides,
                DiagnosticEngine &diags);

} // namespace pipec
