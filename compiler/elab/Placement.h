// Placement: evaluates flows and `place` declarations into ScheduleIR::flows
// (stage -> slot, per flow) and the per-rank slot table the rank interpreter uses.
// Reports flows that overlap, leave gaps or leave 0..microbatches, placements
// outside the topology, and two different stages on one slot.
#pragma once

#include "elab/Evaluator.h"
#include "elab/ScheduleIR.h"
#include "elab/SlotTable.h"

namespace pipec {

bool elaboratePlacement(const ast::Schedule &schedule, Evaluator &eval, DiagnosticEngine &diags,
                        ScheduleIR &ir, SlotTable &slots);

} // namespace pipec
