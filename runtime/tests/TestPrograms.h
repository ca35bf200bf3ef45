// Hand-written program tables the executor's tests share, and running them as
// an emitted program's main() would (with stream programs from TestStreams.h).
#pragma once

#include "pipert/Program.h"

#include <functional>
#include <string>
#include <vector>

namespace pipert::test {

// 1F1B, P = 2, M = 2. Rank 0: F0 F1 B0 B1; rank 1: F0 B0 F1 B1.
extern const Program kOneFOneB;
// A V on one rank: chunk 0 holds stage 0, chunk 1 stage 1; an F&B pair of
// different chunks and micro-batches, and a split backward.
extern const Program kV;

// Runs `program` with the command line `args` (argv[0] excluded); the exit status.
int runTestProgram(const Program &program, std::vector<std::string> args);

// What `f` writes to file descriptor `fd` (1 or 2) while it runs; its result in `result`.
std::string outputOf(int fd, const std::function<int()> &f, int &result);

} // namespace pipert::test
