// The part every emitted program shares: a header comment (what the schedule
// is, what the checks proved) and the schedule's tables in the form of
// <pipert/Program.h>, ending with `static const pipert::Program kProgram`.
// The CPU and CUDA emitters add what their runtime needs and a main(). The
// program states its format version (pipert/ProgramFormat.h) and checks it
// against the runtime headers it is compiled with.
//
// Output is golden-tested, so it is deterministic: no dates, no paths but the
// one the user gave.
#pragma once

#include "check/Checks.h"
#include "elab/ScheduleIR.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace pipec {

struct ProgramTarget {
  const char *name;                    // "cpu", "cuda": named in the header comment
  const char *header;                  // the runtime header the program includes
  std::vector<std::string> paragraphs; // more of the header comment
};

// Requires a schedule whose checks passed (report.ok, report.comm set).
void writeProgramTables(const ScheduleIR &ir, const CheckReport &report,
                        const std::string &sourcePath, const ProgramTarget &target,
                        llvm::raw_ostream &out);

// "B[2]=3": a cost setting as a header comment quotes it (as --cost takes it).
std::string costText(const std::string &name, int64_t stage, double value);

// Writes `text` as // comment lines no wider than 80 columns where words allow.
void writeComment(llvm::StringRef text, llvm::raw_ostream &out);

// Entries [0, count) written `perLine` to a line, each line led by its first
// index; with OneLineIfShort a short list fits on the declaration's line.
enum class Layout { Rows, OneLineIfShort };
void writeRows(size_t count, size_t perLine, Layout layout, llvm::raw_ostream &out,
               const std::function<void(size_t)> &writeEntry);

} // namespace pipec
