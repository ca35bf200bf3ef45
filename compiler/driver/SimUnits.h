// `pipec sim --model ...`: the costs of one schedule in seconds and bytes, from
// the planner's model of a model, a cluster and a training setup, and the
// summary sim prints with them (step time, MFU, memory per GPU).
#pragma once

#include "driver/Commands.h"
#include "plan/Planner.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace pipec {

// Costs `file` as elaborated under `elab`: P from the schedule, dp from the GPUs,
// M from the global batch (added to `elab` when not given; an -D M that differs
// is an error), ep from --ep (default 1). nullopt with `error` set otherwise.
std::optional<plan::Candidate> costInUnits(const std::string &file, ElabOptions &elab,
                                           const plan::PlanInputs &inputs,
                                           std::string &error);

// The summary as the "in_units" attribute of sim's JSON document.
void writeUnitsJson(const plan::Candidate &c, llvm::json::OStream &j);

void printUnitsSummary(const plan::PlanInputs &inputs, const plan::Candidate &c,
                       llvm::raw_ostream &out);

} // namespace pipec
