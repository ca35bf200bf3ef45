// Checks an emitted program's tables before anything runs. The compiler proved
// the schedule, but the runtime reads whatever tables it is linked with (an
// edited file, a hand-written test, a bug): a bad index would be a crash, a
// message never sent a hang. Each check names the table as the emitted file
// spells it and the entry, e.g. "kMessages[3]: to rank 7 is out of range (the
// program has 4 ranks)". The CPU and CUDA executors both call it first.
//
// Checked: counts and array pointers; every index in range (ranks, ops, stages,
// micro-batches, messages, sync groups, streams, events); each overlap pair a
// forward then a backward; a chunk holds one stage; each message produced and
// consumed by ops that fit it, sent once by its sender and received once by its
// receiver; and in a stream program, every op run once (whole or its parts in
// order), every message sent after the op producing it, received once, each
// channel's sends in the order of its receives, every event recorded once
// before any wait on it (in the rank's command order), Runs on the compute or
// expert stream, transfers on a channel stream.
#pragma once

#include "pipert/Program.h"
#include "pipert/StreamProgram.h"

#include <stdexcept>
#include <string>

namespace pipert {

class InvalidProgram : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The first problem found, or "" when the tables are consistent.
std::string programTableError(const Program &program);
std::string streamProgramError(const Program &program, const StreamProgram &streams);

// Throw InvalidProgram ("invalid program table <table>[<index>]: ...").
void validateProgram(const Program &program);
void validateProgram(const Program &program, const StreamProgram &streams);

} // namespace pipert
