// The one JSON form of a planned candidate, written by `pipec plan --format
// json` (each element of "candidates") and by `pipec sim --model --format json`
// (its "in_units" object): the same fields, names and units in both. Every
// number is checked finite; one that is not is written as null, so the
// document is always JSON.
#pragma once

#include "plan/Planner.h"

#include "llvm/Support/JSON.h"

namespace pipec::plan {

enum class CandidateFields {
  Plan,  // everything, with the schedule, its parameters and the per-stage costs
  Units, // sim prints the schedule and its costs itself
};

// The attributes of one candidate, written into the object `j` is inside.
void writeCandidateAttributes(const Candidate &c, CandidateFields fields, llvm::json::OStream &j);

// {"F[0]": seconds, ...}: the per-stage costs `pipec sim --costs` takes.
void writeCostsObject(const PlanCosts &costs, llvm::json::OStream &j);

// A number, or null when it is not finite.
void writeNumber(llvm::json::OStream &j, llvm::StringRef key, double value);

// "none", "selective", "full".
const char *recomputeName(Recompute r);

} // namespace pipec::plan
