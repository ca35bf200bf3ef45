// Writes an imported schedule as an explicit .pipe file: literal topology, one
// placement (or one flow per placement), and a `rank N { }` program per rank
// whose every op names its chunk and micro-batch. Placements are written as
// the closed form they match (s, s % R, a V, ...) or else as a lookup.
#pragma once

#include "interop/TorchImport.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

namespace pipec {

void writePipe(const ImportedSchedule &schedule, llvm::StringRef name, llvm::StringRef source,
               llvm::raw_ostream &out);

// A schedule name made from a file name: "torch_zbv-P4.csv" -> "torch_zbv_P4".
std::string scheduleNameFor(llvm::StringRef path);

} // namespace pipec
