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

// "P=8 M=16 dp=4 ep=1", then v=2 when the schedule has one, tp, cp and b when
// not 1 or when `search` varies them, and the recomputation and ZeRO stage when
// `search` varies them (otherwise the header states them once).
std::string describeLayout(const ParallelSizes &layout);
// "1 MTP module", "2 MTP modules": the multi-token prediction modules trained.
std::string describeMtpModules(int64_t modules);
std::string describeCandidate(const Candidate &c, const SearchOptions &search);

} // namespace pipec::plan
