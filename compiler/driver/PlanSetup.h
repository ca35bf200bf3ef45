// Reads the planner's inputs named on the command line (ModelArgs) into a
// PlanInputs; shared by `pipec plan` and `pipec sim --model`.
#pragma once

#include "driver/Commands.h"
#include "plan/Planner.h"

#include <string>

namespace pipec {

// false with `error` set ("--model: ...") when an input cannot be read or is invalid.
bool loadPlanInputs(const ModelArgs &args, plan::PlanInputs &inputs, std::string &error);

// What `plan` searches: each of t, cp, b, recomputation and ZeRO stage the
// user did not fix. t: the divisors of a node's GPUs (up to 8) that divide the
// attention heads; cp: 1, 2, 4, 8 while each keeps 4,096 tokens or more; b: 1,
// 2, 4 (up to the global batch); every recomputation; ZeRO 0-3.
plan::SearchOptions planSearch(const ModelArgs &args, const plan::PlanInputs &inputs);

// The schedule library shipped with pipec: every examples/*.pipe, sorted; empty
// with `error` set when the directory cannot be found.
std::vector<std::string> libraryFiles(std::string &error);

} // namespace pipec
