// The one entry point from text to AST. ANTLR stays behind this function: nothing
// outside compiler/syntax includes a generated header or an ANTLR type.
#pragma once

#include "diag/Diagnostics.h"
#include "syntax/AST.h"

#include <memory>

namespace pipec {

// Parses buffer `bufferId` of diags.sources(). Syntax problems are reported to
// `diags`, several per run; the result is null if any was an error.
std::unique_ptr<ast::Schedule> parseSchedule(unsigned bufferId, DiagnosticEngine &diags);

// Parses a half-open range `lo..hi` (a -D NAME=A..B), the text of buffer
// `bufferId` from byte `offset` on. Returns false after reporting an error.
bool parseRangeText(unsigned bufferId, size_t offset, ast::ExprPtr &lo, ast::ExprPtr &hi,
                    DiagnosticEngine &diags);

} // namespace pipec
