// The stream programs of the CUDA backend, as `pipec emit --target cuda` writes
// them next to the Program tables: per rank, the commands its host thread
// enqueues in order (compiler/codegen/StreamLowering.h explains the lowering).
// Streams of a rank: 0 compute, 1 expert communication (the all-to-alls of
// overlap pairs), 2.. one per point-to-point channel. Events are per rank,
// each recorded once per step before any wait on it.
//
// The one definition of these tables and of the names emitted programs spell
// them with: pipec includes this header too (it is dependency-free).
#pragma once

#include "pipert/ProgramFormat.h"
#include "pipert/SubOp.h"

#include <cstdint>

namespace pipert {

// Command names differ in more than a letter, so a misread table line shows.
enum class StreamCmd : uint8_t { Run = 0, Send = 1, Receive = 2, RecordEvent = 3, WaitEvent = 4 };
inline constexpr int kNumStreamCmds = 5;

// What a Run executes: the whole op, or one sub-operation of a pair's half.
enum class RunPart : uint8_t { Whole = 0, Attention = 1, Dispatch = 2, Mlp = 3, Combine = 4 };
inline constexpr int kNumRunParts = 5;

// The part that runs sub-operation `sub`, and back (for a part other than Whole).
constexpr RunPart runPartOf(SubOp sub) { return static_cast<RunPart>(static_cast<int>(sub) + 1); }
constexpr SubOp subOpOf(RunPart part) { return static_cast<SubOp>(static_cast<int>(part) - 1); }
static_assert(runPartOf(SubOp::Attention) == RunPart::Attention &&
                  runPartOf(SubOp::Dispatch) == RunPart::Dispatch &&
                  runPartOf(SubOp::Mlp) == RunPart::Mlp && runPartOf(SubOp::Combine) == RunPart::Combine,
              "RunPart lists the sub-operations in SubOp's order, after Whole");

inline constexpr uint16_t kComputeStream = 0;
inline constexpr uint16_t kExpertStream = 1;
inline constexpr uint16_t kFirstChannelStream = 2;

struct StreamCommand {
  StreamCmd cmd;
  RunPart part;    // Run only
  uint16_t stream;
  uint32_t arg;    // Run: op index; Send/Receive: message id; RecordEvent/WaitEvent: event id
};

struct RankStreams {
  const StreamCommand *commands;
  uint32_t numCommands;
  uint16_t numStreams;
  uint32_t numEvents;
};

struct StreamProgram {
  const RankStreams *ranks; // Program::numRanks entries
};

// The names emitted programs give the commands and parts (as constants of the
// enums above), and errors and traces print.
constexpr const char *streamCmdName(StreamCmd cmd) {
  switch (cmd) {
  case StreamCmd::Run: return "Run";
  case StreamCmd::Send: return "Send";
  case StreamCmd::Receive: return "Receive";
  case StreamCmd::RecordEvent: return "RecordEvent";
  case StreamCmd::WaitEvent: return "WaitEvent";
  }
  return "?";
}
constexpr const char *runPartName(RunPart part) {
  switch (part) {
  case RunPart::Whole: return "All";
  case RunPart::Attention: return "Attn";
  case RunPart::Dispatch: return "Disp";
  case RunPart::Mlp: return "Mlp";
  case RunPart::Combine: return "Comb";
  }
  return "?";
}

} // namespace pipert
