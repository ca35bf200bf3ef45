// `pipec emit --target json`: a checked schedule as one JSON document, the
// program a runtime outside this repository's C++ (the Python package in
// python/pipec, over torch.distributed) runs. It carries what the checks proved
// and nothing a runtime would have to re-derive: each rank's ops in order (with
// its overlap pairs and the steps they form), every point-to-point message with
// the order each rank posts its sends and receives (the order the deadlock
// check proved, comm/CommPlan.h), when each activation is stored and freed with
// the live count after every op (check/Memory.cpp), the predicted peak per
// rank, which slot holds which copy of each stage, and which ranks compute
// losses. README "Program export (JSON)" documents every field; a runtime
// checks `version` and refuses another.
//
// Deterministic (golden-tested): no dates, no paths but the one the user gave.
#pragma once

#include "check/Checks.h"
#include "elab/ScheduleIR.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace pipec {

// Bumped whenever a field changes meaning or goes away (new fields keep it).
// 2: ops of kind "R" (a replayed forward; its F says "recomputed": true and
// keeps nothing) and "microbatch_sizes". A program without either is written
// as version 1, which it still is.
inline constexpr int kProgramJsonVersion = 2;

// Writes the program of `ir`, whose checks passed (report.ok, report.comm set).
void writeProgramJson(const ScheduleIR &ir, const CheckReport &report,
                      const std::string &sourcePath, llvm::raw_ostream &out);

} // namespace pipec
