// The one writer of explicit .pipe files, for `pipec import` and `pipec synth`:
// a header comment, the fixed sizes as parameters that only their own value
// satisfies (`schedule s(P = 4, M = 8) { require P == 4 ...`, so `-D P=4` is
// accepted and `-D P=8` is a clear error), literal stages, one placement (or
// one flow per placement), and programs in which every op names its chunk and
// micro-batch. Written compact, runs that repeat one micro-batch later are
// `for` loops and ranks whose programs share a shape share one `rank r { }`
// program with bounds and micro-batches affine in r (RankPrograms.h); the
// rest, or everything when written literally, is a `rank N { }` program per
// rank, one op per line. For import, placements are written
// as the closed form they match (s, s % R, a V, ...), else as a lookup, else as
// packed tables (PlacementExpr.h), so that the file stays within the front
// end's limits on statements and lines.
#pragma once

#include "diag/Diagnostics.h"
#include "interop/RankPrograms.h"
#include "interop/TorchImport.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace pipec {

// A schedule with every op explicit, as import and synth produce it.
struct ExplicitSchedule {
  std::vector<std::string> header; // comment lines, without "// "
  std::string name;
  int64_t ranks = 1, stages = 1, microbatches = 1, copies = 1;
  std::string tool;      // "pipec import", "pipec synth": named by the size requirements
  std::string placement; // lets, then `place` or `flow` lines, each "  ...\n"
  std::vector<std::vector<PipeStep>> programs; // per rank
  bool loops = false;      // write runs that repeat one micro-batch later as `for` loops
  bool shareRanks = true;  // with loops: one `rank r` program where ranks share a shape
};

void writeExplicitSchedule(const ExplicitSchedule &schedule, llvm::raw_ostream &out);

// Reports CsvPlacementTooIrregular and writes nothing when a placement cannot
// be written within a statement's token limit; returns whether it wrote.
// `compact`: loops and shared rank programs (`pipec import`), else one op per
// line, so that a diagnostic on the file points at the very op (`pipec check
// FILE.csv`).
bool writePipe(const ImportedSchedule &schedule, llvm::StringRef name, llvm::StringRef source,
               DiagnosticEngine &diags, llvm::raw_ostream &out, bool compact);

// A schedule name made from a file name: "torch_zbv-P4.csv" -> "torch_zbv_P4".
std::string scheduleNameFor(llvm::StringRef path);

// `text` fit for a `//` comment: control characters, '\' and bytes outside
// ASCII written as escapes, so that a file name cannot end the comment or
// break the source's UTF-8.
std::string escapeForComment(llvm::StringRef text);

} // namespace pipec
