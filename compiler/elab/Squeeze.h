// `squeeze;` / `squeeze limit E;`: compaction of an elaborated schedule, the
// "squeeze" of Qi et al. (NeurIPS'24, V-Half/V-Min) as a pass over any rank
// programs' result. The ranks' orders are timed in unit slots (every op one
// slot, as early as its dependencies and its rank allow); the W's are taken
// out; then, in global slot order (ties: lower rank first), each other op moves
// to the earliest free slot of its rank after its dependencies' new slots, if
// the rank's live activations stay within the limit everywhere that move
// changes them, W's running in free slots (the oldest owed first). The W's
// then go to those free slots. Each stage keeps its forwards and its backwards
// in their written order. The result is ordinary per-rank op lists, which the
// checks prove like any other.
#pragma once

#include "elab/RankInterpreter.h"

namespace pipec {

// Reorders ir.ranks in place. `limit` < 0: the written schedule's highest peak
// (live forwards whose B or W has not run, over all ranks). Returns false
// after an error (an op squeeze cannot move, or the iteration limit). An order
// that cannot run as written (a missing or repeated op, a cycle) is left as it
// is, for the checks to report.
bool runSqueeze(ScheduleIR &ir, int64_t limit, const ast::SqueezeDecl &decl,
                DiagnosticEngine &diags, ElabBudget &budget);

} // namespace pipec
