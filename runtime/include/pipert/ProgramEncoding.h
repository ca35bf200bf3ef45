// The compact form of a program's tables: what `pipec emit` writes into a
// program and what the runtime decodes at start. One byte blob holds the
// tables of <pipert/Program.h> and, for the CUDA target, of
// <pipert/StreamProgram.h>; the source spells it as base64 text in a string
// literal, which compilers read at the speed they read any string (a table of
// initializers costs them a parse-tree node per number).
//
// Layout (every integer an unsigned LEB128 varint, signed ones zigzag-coded):
//   "PIPT", format version, name, parameters (length + bytes),
//   numRanks, numStages, numMicrobatches, flags (bit 0: stream programs),
//   per rank: ops, sends, receives; messages; sync groups; peaks per rank;
//   with streams, per rank: numStreams, numEvents, commands.
// Entries are delta-coded against a prediction the decoder repeats (an op from
// the last op of its kind and chunk, a message from the last on its channel, a
// command's stream from its context and its argument from the series it
// continues; runtime/src/ProgramFields.h describes every field once) and lead
// with a byte saying which fields differ, so a regular schedule costs little
// more than a byte per op, message and command: DualPipeV at P = 64, M = 512 (2.3 million entries) is 3.3 MB.
//
// The decoder trusts nothing: truncation, an overlong varint, a value out of
// its field's range, a count larger than the bytes left, or trailing bytes are
// each an error naming the byte offset. What the tables mean (indices, orders,
// events) is ProgramValidation's to check.
//
// Dependency-free (the standard library only): pipec links it to encode.
#pragma once

#include "pipert/Program.h"
#include "pipert/StreamProgram.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pipert {

// The tables with owned storage, as the encoder reads and the decoder fills them.
struct ProgramData {
  struct Rank {
    std::vector<ProgramOp> ops;
    std::vector<uint32_t> sends, receives;
  };
  struct SyncGroup {
    int32_t stage = 0;
    std::vector<int32_t> ranks, chunks; // the same length
  };
  struct Streams {
    std::vector<StreamCommand> commands;
    uint16_t numStreams = 0;
    uint32_t numEvents = 0;
  };

  std::string name, parameters;
  int32_t numRanks = 0, numStages = 0, numMicrobatches = 0;
  std::vector<Rank> ranks; // numRanks entries
  std::vector<ProgramMessage> messages;
  std::vector<SyncGroup> syncGroups;
  std::vector<int64_t> predictedPeakActivations; // numRanks entries
  bool hasStreams = false;
  std::vector<Streams> streams; // numRanks entries when hasStreams
  std::vector<int32_t> microbatchSizes; // numMicrobatches entries (`sizes`), or empty: all 1
};

bool operator==(const ProgramData &a, const ProgramData &b);
inline bool operator!=(const ProgramData &a, const ProgramData &b) { return !(a == b); }

// The runtime's view of ProgramData: Program and StreamProgram pointing into
// it. `data` must outlive the view and stay unchanged.
class ProgramView {
public:
  explicit ProgramView(const ProgramData &data);
  ProgramView(const ProgramView &) = delete;
  ProgramView &operator=(const ProgramView &) = delete;

  const Program &program() const { return program_; }
  const StreamProgram &streams() const { return streams_; } // ranks == nullptr without streams

private:
  std::vector<RankTable> ranks_;
  std::vector<SyncGroupTable> syncGroups_;
  std::vector<RankStreams> rankStreams_;
  Program program_{};
  StreamProgram streams_{};
};

std::vector<uint8_t> encodeProgram(const ProgramData &data);
// The format `data` is written in: kProgramFormatTransfers when it has BPipe's
// transfers (their ops or messages), else kProgramFormatVersion.
int formatVersionOf(const ProgramData &data);

// "" and `data` filled, or the first problem ("byte 17: truncated varint").
std::string decodeProgram(const uint8_t *bytes, size_t size, ProgramData &data);

// Base64 (RFC 4648, with padding), as the emitted string literal holds the blob.
std::string toBase64(const std::vector<uint8_t> &bytes);
// "" and `bytes` filled, or the first problem ("character 9: '!' is not base64").
std::string fromBase64(const char *text, size_t size, std::vector<uint8_t> &bytes);

// Both steps: "" and `data` filled, or "invalid program data: <problem>".
std::string decodeProgramText(const char *text, size_t size, ProgramData &data);

// The decoded tables as text, for a built program's --dump-program: each table
// under the name ProgramValidation's errors give it (kRank0Ops, kMessages,
// kRank0Commands, ...), entries written as the struct fields in order.
std::string dumpProgram(const ProgramData &data);

// What an emitted main() does first: decode the program's text into `data`;
// with --dump-program as the only argument, print the tables instead of
// running them. Both executors run stream programs, so data without them is
// invalid too (`reemitHint` says how to get them). Returns -1 when `data` is
// ready to run, else the exit status (2 with the problem on stderr: the data is
// invalid; 0: dumped).
int startEncodedProgram(const char *text, size_t size, int argc, char **argv, ProgramData &data,
                        const char *reemitHint);

} // namespace pipert
