// Writes an imported schedule as an explicit .pipe file: literal topology, one
// placement (or one flow per placement), and a `rank N { }` program per rank
// whose every op names its chunk and micro-batch. Placements are written as
// the closed form they match (s, s % R, a V, ...), else as a lookup, else as
// packed tables (PlacementExpr.h), so that the file stays within the front
// end's limits on statements and lines.
#pragma once

#include "diag/Diagnostics.h"
#include "interop/TorchImport.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

namespace pipec {

// Reports CsvPlacementTooIrregular and writes nothing when a placement cannot
// be written within a statement's token limit; returns whether it wrote.
bool writePipe(const ImportedSchedule &schedule, llvm::StringRef name, llvm::StringRef source,
               DiagnosticEngine &diags, llvm::raw_ostream &out);

// A schedule name made from a file name: "torch_zbv-P4.csv" -> "torch_zbv_P4".
std::string scheduleNameFor(llvm::StringRef path);

// `text` fit for a `//` comment: control characters, '\' and bytes outside
// ASCII written as escapes, so that a file name cannot end the comment or
// break the source's UTF-8.
std::string escapeForComment(llvm::StringRef text);

} // namespace pipec
