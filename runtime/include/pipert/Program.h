// The interface emitted programs target: a schedule as compact tables, exactly as
// the compiler elaborated and proved it (ops per rank; every point-to-point
// message; each rank's send and receive posting order, from the compiler's one
// communication model; the gradient-sync groups of replicated stages; the peak
// activations the checker predicts). `pipec emit --target cpu` writes these
// tables and the per-rank stream programs (pipert/StreamProgram.h), encoded
// (pipert/ProgramEncoding.h), and a main() that calls
// runEncodedProgram.
//
// The one definition of the tables: pipec includes this header to write them
// (it is dependency-free), so compiler and runtime share every struct and name.
#pragma once

#include "pipert/ChannelKey.h"
#include "pipert/ProgramFormat.h"

#include <cstddef>
#include <cstdint>

namespace pipert {

// R replays the forward of a (stage, micro-batch) whose F kept only its input
// (activation checkpointing): a rank with an R for (chunk, mb) drops that F's
// stored state right after the F and stores it again at the R.
// Offload moves the stored state of (chunk, mb) off the device to host memory
// after its F; Reload brings it back before its backward. Both run on the
// rank's copy stream (pipert/StreamProgram.h) and move no message.
// BPipe's transfers move it to a partner rank instead: the owner's Evict sends
// the stored state of (chunk, mb) to the partner, whose Hold receives and keeps
// it (counted in the partner's live activations); the partner's Return sends
// it back and the owner's Load receives it and stores it again. Hold and
// Return name the owner's chunk, stage and micro-batch; the partner is the
// other end of their message (kEvictedMessage, kReturnedMessage). All four run
// on the copy stream too.
// The codes are the compiler's OpKind values. Offload and Reload came without
// a format bump (codes 0..4 kept their meaning; an older runtime refuses 5 and
// 6 by name); the transfers, 7..10, need a fourth kind bit (bit 7 of an op's
// lead byte, ProgramFields.h), so a program with them is written in format
// kProgramFormatTransfers and an older runtime refuses its version.
enum class OpCode : uint8_t {
  F = 0, B = 1, I = 2, W = 3, R = 4, Offload = 5, Reload = 6,
  Evict = 7, Hold = 8, Return = 9, Load = 10
};
inline constexpr int kNumOpCodes = 11;

// How tables, dumps, traces and errors spell an op kind ("?" past the codes).
constexpr const char *opCodeName(OpCode kind) {
  switch (kind) {
  case OpCode::F: return "F";
  case OpCode::B: return "B";
  case OpCode::I: return "I";
  case OpCode::W: return "W";
  case OpCode::R: return "R";
  case OpCode::Offload: return "Offload";
  case OpCode::Reload: return "Reload";
  case OpCode::Evict: return "Evict";
  case OpCode::Hold: return "Hold";
  case OpCode::Return: return "Return";
  case OpCode::Load: return "Load";
  }
  return "?";
}
// Offload ... Load: they move a stored activation, compute nothing.
constexpr bool isMemoryOp(OpCode kind) { return kind >= OpCode::Offload && kind <= OpCode::Load; }
// BPipe's four: each sends or receives a message of its own kind.
constexpr bool isTransfer(OpCode kind) { return kind >= OpCode::Evict && kind <= OpCode::Load; }
// Hold and Return run on the partner: their chunk and stage are the owner's.
constexpr bool onPartner(OpCode kind) { return kind == OpCode::Hold || kind == OpCode::Return; }
// Ops that take an activation off their rank (Offload, Evict, Return) or put
// one on it (Reload, Load, Hold): the copy stream orders them against compute.
constexpr bool movesOff(OpCode kind) {
  return kind == OpCode::Offload || kind == OpCode::Evict || kind == OpCode::Return;
}

// ProgramMessage::gradient, the message's kind (the field's name predates the
// transfers): 0 and 1 keep their meaning; 2 and 3 need a second kind bit, so
// they appear only in programs of format kProgramFormatTransfers.
inline constexpr uint8_t kActivationMessage = 0; // to the next stage
inline constexpr uint8_t kGradientMessage = 1;   // to the previous stage
inline constexpr uint8_t kEvictedMessage = 2;    // Evict -> Hold: owner to partner
inline constexpr uint8_t kReturnedMessage = 3;   // Return -> Load: partner to owner
inline constexpr int kNumMessageKinds = 4;

constexpr const char *messageKindName(uint8_t kind) {
  switch (kind) {
  case kActivationMessage: return "the activation";
  case kGradientMessage: return "the gradient";
  case kEvictedMessage: return "the evicted activation";
  case kReturnedMessage: return "the returned activation";
  }
  return "the message";
}

struct ProgramOp {
  OpCode kind;
  uint8_t pairedWithNext; // 1: this op and the next form an overlap pair (forward first)
  int16_t chunk;
  int32_t stage;
  int32_t microbatch;     // global id
};

struct ProgramMessage {
  uint8_t gradient;       // the kind: 0 activation (stage -> stage+1), 1 gradient (stage ->
                          // stage-1), 2 evicted, 3 returned (stage's own state, to and fro)
  int32_t from, to;       // ranks
  int32_t stage;          // producing stage
  int32_t microbatch;
  uint32_t producerOp;    // op index on `from`
  uint32_t consumerOp;    // op index on `to`
};

// The channel a message travels on (pipert/ChannelKey.h): each kind its own.
constexpr uint64_t channelKey(const ProgramMessage &m) {
  return channelKey(m.from, m.to, unsigned(m.gradient));
}

struct RankTable {
  const ProgramOp *ops;
  uint32_t numOps;
  const uint32_t *sends;    // message ids in the order the rank posts them
  uint32_t numSends;
  const uint32_t *receives; // message ids in the order the rank posts them
  uint32_t numReceives;
};

struct SyncGroupTable {
  int32_t stage;
  const int32_t *ranks;     // the slots holding a copy of `stage`
  const int32_t *chunks;
  uint32_t size;
};

struct Program {
  const char *name;          // schedule name
  const char *parameters;    // "P = 4, M = 8"
  int32_t numRanks, numStages, numMicrobatches;
  const RankTable *ranks;    // numRanks entries
  const ProgramMessage *messages;
  uint32_t numMessages;
  const SyncGroupTable *syncGroups;
  uint32_t numSyncGroups;
  const int64_t *predictedPeakActivations; // per rank, from the checker
  // Per micro-batch, its size in units (`sizes`): micro-batch mb has
  // size * --seq tokens, its activations count size units and its loss is
  // weighted by its share of the batch's tokens. Null: every size is 1.
  const int32_t *microbatchSizes = nullptr;
};

struct StreamProgram; // pipert/StreamProgram.h: the per-rank commands the executor runs

// Parses the command line (--steps, --hidden, --seq, --model, --dtype, --check,
// --trace, --seed, --timeout, ...), runs the program's stream programs (the
// ones the CUDA backend runs) and returns the exit status.
int runProgram(const Program &program, const StreamProgram &streams, int argc, char **argv);

// What an emitted program's main() calls: decodes `size` characters of encoded
// tables and stream programs (pipert/ProgramEncoding.h), validates and runs
// them as runProgram does. A bad encoding exits 2 naming the byte; `--dump-program` as the only
// argument prints the decoded tables instead.
int runEncodedProgram(const char *text, size_t size, int argc, char **argv);

} // namespace pipert
