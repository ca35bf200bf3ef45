// The entry point of an emitted CUDA program (`pipec emit --target cuda`): the
// schedule's tables, its stream programs, and the command line. Implemented by
// the CUDA runtime (runtime/cuda); returns the exit status, 77 when the machine
// has no CUDA device.
#pragma once

#include "pipert/Program.h"
#include "pipert/StreamProgram.h"

#include <cstddef>

namespace pipert {

int runCudaProgram(const Program &program, const StreamProgram &streams, int argc, char **argv);

// What an emitted CUDA program's main() calls: the tables and stream programs
// encoded (pipert/ProgramEncoding.h), decoded, validated and run as
// runCudaProgram does; `--dump-program` alone prints them decoded.
int runEncodedCudaProgram(const char *text, size_t size, int argc, char **argv);

} // namespace pipert
