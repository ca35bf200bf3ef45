// `pipec sim --model ...`: the costs of one schedule in seconds and bytes, from
// the planner's model of a model, a cluster and a training setup, and the
// summary sim prints with them (step time, MFU, memory per GPU). The schedule
// file is parsed once and compiled once: its P is read from the parsed file,
// the layout (plan::layoutFor, the planner's own arithmetic) sets M, and the one
// compilation sim simulates is the one costed here.
#pragma once

#include "driver/Commands.h"
#include "frontend/Compilation.h"
#include "plan/Planner.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace pipec {

// After parsing: P as -D'd or as the schedule declares it, tp and b from the
// flags, dp from the GPUs, M from the global batch (added to `elab` when not
// given; an -D M that differs is an error), ep from --ep (default 1). v is
// read after elaboration. nullopt with `error` set otherwise.
std::optional<plan::ParallelSizes> unitsLayout(const Compilation &parsed, ElabOptions &elab,
                                               const plan::PlanInputs &inputs, std::string &error);

// Once compiled and checked: the candidate of that compilation at `layout`
// (taken over by it: sim then reads the IR and report through it).
std::optional<plan::Candidate> unitsCandidate(const plan::CompiledSchedule &compiled,
                                              plan::ParallelSizes layout,
                                              const plan::PlanInputs &inputs, std::string &error);

// The summary as the "in_units" attribute of sim's JSON document.
void writeUnitsJson(const plan::Candidate &c, llvm::json::OStream &j);

void printUnitsSummary(const plan::PlanInputs &inputs, const plan::Candidate &c,
                       llvm::raw_ostream &out);

} // namespace pipec
