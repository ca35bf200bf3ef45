// Schedules taken the whole way a built program goes: the front end, the
// checks, the tables and the stream-program lowering (codegen/ProgramTables.h,
// codegen/StreamLowering.h), then the CPU runtime's executor (pipert::runProgram)
// in-process, with its command line.
#pragma once

#include "pipert/ProgramEncoding.h"

#include <string>
#include <vector>

namespace pipec::test {

// The tables with stream programs of `source` under the defines; "" on
// success, else why not (front-end errors, failed checks).
std::string lowerProgram(const std::string &source, const std::vector<std::pair<std::string, int64_t>> &defines,
                         pipert::ProgramData &data);

// runProgram's exit status for `args`, its stdout swallowed (stderr kept).
int runLowered(const pipert::ProgramData &data, const std::vector<std::string> &args);

} // namespace pipec::test
