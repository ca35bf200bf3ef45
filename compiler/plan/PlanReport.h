// What `pipec plan` prints: the ranked table and the recommendation with why it
// beat the runner-up (text), or one JSON document; and, when nothing fits, the
// changes that would make something fit.
#pragma once

#include "plan/Planner.h"

#include "llvm/Support/raw_ostream.h"

namespace pipec::plan {

// At most `rows` candidates are listed (0: all); the rest are counted.
void printPlanText(const PlanInputs &inputs, const PlanResult &plan, llvm::raw_ostream &out,
                   size_t rows = 20);
void printPlanJson(const PlanInputs &inputs, const PlanResult &plan, llvm::raw_ostream &out);
void printRemedies(const std::vector<Remedy> &remedies, llvm::raw_ostream &out);

// "P=8 M=16 dp=4 ep=1", "v=2" too when the schedule has one.
std::string describeLayout(const ParallelSizes &layout);
// "80 GB" style (decimal GB).
std::string formatGB(double bytes);

} // namespace pipec::plan
