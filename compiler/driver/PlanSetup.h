// Reads the planner's inputs named on the command line (ModelArgs) into a
// PlanInputs; shared by `pipec plan` and `pipec sim --model`.
#pragma once

#include "driver/Commands.h"
#include "plan/Planner.h"

#include <string>

namespace pipec {

// false with `error` set ("--model: ...") when an input cannot be read or is invalid.
bool loadPlanInputs(const ModelArgs &args, plan::PlanInputs &inputs, std::string &error);

// The schedule library shipped with pipec: every examples/*.pipe, sorted; empty
// with `error` set when the directory cannot be found.
std::vector<std::string> libraryFiles(std::string &error);

} // namespace pipec
