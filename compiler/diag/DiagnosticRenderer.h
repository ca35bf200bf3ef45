// Prints collected diagnostics. Text follows clang: file:line:col: error: msg [Name],
// the source line, a caret and range, then notes.
#pragma once

#include "diag/Diagnostics.h"

namespace llvm {
class raw_ostream;
}

namespace pipec {

void renderText(const DiagnosticEngine &engine, llvm::raw_ostream &out, bool color);

} // namespace pipec
