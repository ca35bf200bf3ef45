// The individual checks run by runChecks (Checks.cpp), in that order. Each returns
// false after reporting at least one error. Internal to compiler/check.
#pragma once

#include "check/Checks.h"

namespace pipec {

bool checkParameterCopies(const ScheduleIR &ir, DiagnosticEngine &diags,
                          std::vector<SyncGroup> &syncGroups);
bool checkCoverage(const ScheduleIR &ir, DiagnosticEngine &diags, OpIndex &index);
bool checkMemoryOpPairs(const ScheduleIR &ir, const OpIndex &index, DiagnosticEngine &diags);
bool checkDependencies(const ScheduleIR &ir, const OpIndex &index, DiagnosticEngine &diags);
bool checkCommunication(const ScheduleIR &ir, const CommPlan &plan, DiagnosticEngine &diags);
bool checkMemory(const ScheduleIR &ir, const CheckOptions &options, const CommPlan *comm,
                 DiagnosticEngine &diags, std::vector<RankMemory> &memory);

} // namespace pipec
