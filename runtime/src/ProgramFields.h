// The one description of the encoded program (pipert/ProgramEncoding.h): each
// table's fields, in order, with where each sits in an entry's lead byte and
// what it is guessed from; and the frame, the order of everything in the
// blob. Encoder, decoder, comparison (ProgramCodec.cpp) and the text dump
// (ProgramDump.cpp) are visitors of these functions, so a field added or moved
// here moves in all four at once.
//
// An entry visitor V provides
//   bool lead(F &field, int bit, int width, int limit, const char *what, Name name,
//             int highBit = -1)
//       a field held in the lead byte at bits [bit, bit + width), below `limit`;
//       `name` spells a value in the dump (nullptr: the number); with a
//       `highBit`, the field's bit `width` sits at that bit of the lead byte
//       (a field widened into a bit that older formats kept 0, so their
//       encodings are unchanged);
//   bool guessed(F &field, int64_t guess, int flagBit, const char *what)
//       a field coded as `guess` plus a delta, present when the lead byte's
//       `flagBit` is set.
// F is the field's type, const for visitors that only read. Visitors return
// false to stop (the decoder, at the first problem).
#pragma once

#include "ProgramPredictors.h"

#include "pipert/ProgramEncoding.h"

namespace pipert::codec {

using Name = const char *(*)(unsigned);

inline const char *opKindName(unsigned kind) {
  return kind < unsigned(kNumOpCodes) ? opCodeName(OpCode(kind)) : "?";
}
inline const char *messageKindName(unsigned kind) {
  static const char *const kNames[] = {"Act", "Grad", "Evicted", "Returned"};
  return kind < 4 ? kNames[kind] : "?";
}
inline const char *commandName(unsigned cmd) { return streamCmdName(StreamCmd(cmd)); }
inline const char *partName(unsigned part) { return runPartName(RunPart(part)); }

// Ops: the lead byte holds kind and pairing, and flags for the fields that
// differ from the last op of the same kind and chunk. The kind's fourth bit
// (the transfers, 7..10) is bit 7, set only in format kProgramFormatTransfers.
struct OpTable {
  using Entry = ProgramOp;
  using Predictor = OpPredictor;
  static constexpr int kLeadBits = 7; // the rest must be 0 (format 5; format 6 uses bit 7)
  static constexpr const char *kEntry = "an op";
  static constexpr const char *kCount = "the op count";

  template <class V, class E>
  static bool fields(V &v, E &op, const Predictor &p) {
    if (!v.lead(op.kind, 0, 3, kNumOpCodes, "kind", opKindName, 7) ||
        !v.lead(op.pairedWithNext, 3, 1, 2, "pairing", nullptr) ||
        !v.guessed(op.chunk, p.chunk, 4, "an op's chunk"))
      return false;
    auto [stage, microbatch] = p.guess(int(op.kind), op.chunk);
    return v.guessed(op.stage, stage, 5, "an op's stage") &&
           v.guessed(op.microbatch, microbatch, 6, "an op's micro-batch");
  }
};

// Messages: the lead byte holds the kind, and flags for the fields that differ
// from the message before (its ends) or the last on its channel (the rest).
// The kind's second bit (evicted, returned) is bit 7, as for ops.
struct MessageTable {
  using Entry = ProgramMessage;
  using Predictor = MessagePredictor;
  static constexpr int kLeadBits = 7; // format 6: 8
  static constexpr const char *kEntry = "a message";
  static constexpr const char *kCount = "the message count";

  template <class V, class E>
  static bool fields(V &v, E &m, const Predictor &p) {
    if (!v.lead(m.gradient, 0, 1, kNumMessageKinds, "kind", messageKindName, 7) ||
        !v.guessed(m.from, p.previous.from, 1, "a message's sender") ||
        !v.guessed(m.to, p.previous.to, 2, "a message's receiver"))
      return false;
    MessageGuess guess = p.guess(channelKey(m));
    return v.guessed(m.stage, guess.stage, 3, "a message's stage") &&
           v.guessed(m.microbatch, guess.microbatch, 4, "a message's micro-batch") &&
           v.guessed(m.producerOp, guess.producerOp, 5, "a message's producer op") &&
           v.guessed(m.consumerOp, guess.consumerOp, 6, "a message's consumer op");
  }
};

// Stream commands: the lead byte holds command and part, and flags for a
// stream or argument other than guessed from the commands before.
struct CommandTable {
  using Entry = StreamCommand;
  using Predictor = CommandPredictor;
  static constexpr int kLeadBits = 8;
  static constexpr const char *kEntry = "a command";
  static constexpr const char *kCount = "the command count";

  template <class V, class E>
  static bool fields(V &v, E &c, const Predictor &p) {
    return v.lead(c.cmd, 0, 3, kNumStreamCmds, "command", commandName) &&
           v.lead(c.part, 3, 3, kNumRunParts, "part", partName) &&
           v.guessed(c.stream, p.guessStream(c.cmd), 6, "a command's stream") &&
           v.guessed(c.arg, p.guessArg(c), 7, "a command's argument");
  }
};

// The frame: everything in the blob, in order. A frame visitor Io provides
// magic, version, text, integer, unsignedInteger, flags (the stream programs
// and sizes present or not; the reader marks present sizes by one entry), sized (a list
// whose length is a count read before: allocate it), list (a counted list),
// ids, pairs (two lists of one length, interleaved), entries<Table> and end.
template <class Io, class Data>
bool frame(Io &io, Data &d) {
  if (!io.magic() || !io.version() || !io.text(d.name, "the schedule name") ||
      !io.text(d.parameters, "the parameters") || !io.integer(d.numRanks, "the rank count") ||
      !io.integer(d.numStages, "the stage count") ||
      !io.integer(d.numMicrobatches, "the micro-batch count") ||
      !io.flags(d.hasStreams, d.microbatchSizes) ||
      // Each rank takes at least three bytes (its three counts).
      !io.sized(d.ranks, d.numRanks, 3, "the rank count", "does not fit the data"))
    return false;
  for (auto &rank : d.ranks)
    if (!io.template entries<OpTable>(rank.ops) || !io.ids(rank.sends, "the send count") ||
        !io.ids(rank.receives, "the receive count"))
      return false;
  if (!io.template entries<MessageTable>(d.messages) ||
      !io.list(d.syncGroups, "the sync group count", 2))
    return false;
  for (auto &group : d.syncGroups)
    if (!io.integer(group.stage, "a sync group's stage") ||
        !io.pairs(group.ranks, group.chunks, "a sync group's size", "a sync group's rank",
                  "a sync group's chunk"))
      return false;
  if (!io.sized(d.predictedPeakActivations, d.numRanks, 0, "", ""))
    return false;
  for (auto &peak : d.predictedPeakActivations)
    if (!io.integer(peak, "a predicted peak"))
      return false;
  if (d.hasStreams) {
    if (!io.sized(d.streams, d.numRanks, 3, "", "the stream programs do not fit the data"))
      return false;
    for (auto &s : d.streams)
      if (!io.unsignedInteger(s.numStreams, "a stream count") ||
          !io.unsignedInteger(s.numEvents, "an event count") ||
          !io.template entries<CommandTable>(s.commands))
        return false;
  }
  if (!d.microbatchSizes.empty()) { // the flags said so: one size per micro-batch
    if (!io.sized(d.microbatchSizes, d.numMicrobatches, 1, "the micro-batch count",
                  "is more than the micro-batch sizes left can hold"))
      return false;
    for (auto &size : d.microbatchSizes)
      if (!io.integer(size, "a micro-batch size"))
        return false;
  }
  return io.end();
}

} // namespace pipert::codec
