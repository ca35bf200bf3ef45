// The one place a checked schedule becomes a program, for `pipec emit
// --target cpu|cuda` and `pipec build` alike.
#pragma once

#include "driver/Commands.h"
#include "frontend/Compilation.h"

#include "llvm/Support/raw_ostream.h"

namespace pipec {

// Writes the program for `compilation`, which must have passed its checks. The
// CUDA program's overlap plans use the schedule's `costs { }` block with
// args.costs on top, as `pipec sim` does.
void emitProgram(const Compilation &compilation, BuildTarget target, const CommonArgs &args,
                 llvm::raw_ostream &out);

} // namespace pipec
