// The part every emitted program shares: a header comment (what the schedule
// is, what the checks proved, each rank's counts) and the schedule's tables
// (<pipert/Program.h>, for CUDA also <pipert/StreamProgram.h>) as one encoded
// string, `static const char kProgramData[]` (pipert/ProgramEncoding.h). The
// CPU and CUDA emitters add what their runtime needs and a main(). The program
// states its format version (pipert/ProgramFormat.h) and checks it against the
// runtime headers it is compiled with.
//
// Output is golden-tested, so it is deterministic: no dates, no paths but the
// one the user gave.
#pragma once

#include "check/Checks.h"
#include "codegen/StreamLowering.h"
#include "elab/ScheduleIR.h"
#include "pipert/ProgramEncoding.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <string>
#include <vector>

namespace pipec {

struct ProgramTarget {
  const char *name;                    // "cpu", "cuda": named in the header comment
  std::vector<std::string> paragraphs; // more of the header comment
};

// The tables of a schedule whose checks passed (report.ok, report.comm set),
// without stream programs.
pipert::ProgramData programData(const ScheduleIR &ir, const CheckReport &report);

// Adds the stream programs to the tables (`streams` is emptied).
void addStreams(pipert::ProgramData &data, std::vector<RankStreamProgram> streams);

// One comment line per rank: its commands, streams, events and overlap pairs.
void writeStreamSummary(const std::vector<RankStreamProgram> &streams, llvm::raw_ostream &out);

// The header comment: schedule, checks, target.paragraphs, a line per rank.
void writeProgramHeader(const ScheduleIR &ir, const CheckReport &report,
                        const std::string &sourcePath, const ProgramTarget &target,
                        llvm::raw_ostream &out);

// `#include <header>`, the format check and `kProgramData`, the encoded tables.
void writeProgramData(const pipert::ProgramData &data, const char *header, llvm::raw_ostream &out);

// "B[2]=3": a cost setting as a header comment quotes it (as --cost takes it).
std::string costText(const std::string &name, int64_t stage, double value);

// Writes `text` as // comment lines no wider than 80 columns where words allow.
void writeComment(llvm::StringRef text, llvm::raw_ostream &out);

} // namespace pipec
