// `pipec build --stage-source FILE.cpp`: the user's own stages (C++ written
// against pipert/SimpleStage.h or Stage.h, registered with
// PIPERT_REGISTER_STAGES) compiled with the program's toolchain and flags and
// linked into it as object files -- not an archive, from which the linker would
// drop a file nothing references, and with it the registration.
#pragma once

#include "driver/BuildTools.h"

#include <string>
#include <vector>

namespace pipec {

// Every source exists and is a regular file; otherwise prints an error naming
// it and returns false (a usage error, checked before anything runs).
bool stageSourcesReadable(const std::vector<std::string> &sources);

// Compiles each source into `scratchDir` and appends the objects to `objects`.
// Returns kExitClean; kExitErrors when a source does not compile (the
// compiler's output is printed, then the command); kExitUsage when the
// compiler cannot be started.
int userStageObjects(const Toolchain &toolchain, const std::vector<std::string> &sources,
                     const std::string &scratchDir, std::vector<std::string> &objects);

} // namespace pipec
