// How checks name ops and point at them: "the forward of stage 2, micro-batch 5
// (F0.5)", and a note at the op's source line saying which rank and iteration.
#pragma once

#include "diag/Diagnostics.h"
#include "elab/ScheduleIR.h"

#include <string>

namespace pipec {

// "forward", "backward", "input-gradient half", "weight-gradient half", "offload"...
const char *opKindWord(OpKind kind);
// "F0.5", as `emit --target ir` prints it
std::string opShortName(const ScheduleIR &ir, const Op &op);
// "the forward of stage 2, micro-batch 5 (F0.5)"
std::string describeOp(const ScheduleIR &ir, const Op &op);
// "on rank 3, iteration i = 2"
std::string whereOp(const ScheduleIR &ir, int64_t rank, const Op &op);
// Adds a note at the op's source: "<text> on rank 3, iteration i = 2".
void noteAtOp(Diagnostic &d, const ScheduleIR &ir, int64_t rank, const Op &op,
              const std::string &text);
// Reports `kind` at the op (folding repeats of the same source line); adds the
// rank/iteration context as a note. Returns null for a folded repeat.
Diagnostic *reportAtOp(DiagnosticEngine &diags, DiagKind kind, const ScheduleIR &ir, int64_t rank,
                       const Op &op, std::string message);

} // namespace pipec
