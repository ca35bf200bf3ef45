// Shared by the subcommands: print a compilation's diagnostics and pass times,
// and turn them into an exit status.
#pragma once

#include "driver/Commands.h"
#include "driver/Compilation.h"

namespace pipec {

// Prints diagnostics (and pass times if asked); returns the exit status they imply.
int finish(Compilation &compilation, const CommonArgs &args);

} // namespace pipec
