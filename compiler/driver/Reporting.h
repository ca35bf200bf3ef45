// Shared by the subcommands: print a compilation's diagnostics and pass times,
// and turn them into an exit status.
#pragma once

#include "driver/Commands.h"
#include "driver/Compilation.h"

namespace pipec {

// The exit status a compilation's diagnostics imply.
int exitStatus(Compilation &compilation, const CommonArgs &args);

// Prints diagnostics as text (and pass times if asked); returns exitStatus().
int finish(Compilation &compilation, const CommonArgs &args);

} // namespace pipec
