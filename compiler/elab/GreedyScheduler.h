// Greedy list scheduling of a `rank r greedy limit E { entries }` program: the
// elaborator simulates the schedule in the file's own cost units and, each
// time a rank is idle, appends the first entry (in written order) whose op is
// ready, fits the rank's activation limit and whose `if` holds. The result is
// ordinary per-rank op lists, which every check then proves like any other.
#pragma once

#include "elab/RankInterpreter.h"

namespace pipec {

// Appends every rank's ops to ir.ranks. Returns false after an error (a
// deadlock is reported at the program's `greedy`).
bool runGreedy(const ast::RankProgram &program, ScheduleIR &ir, Evaluator &eval,
               DiagnosticEngine &diags, ElabBudget &budget, RankInterpreter &interpreter,
               SlotTable &slots);

} // namespace pipec
