// The stream programs of the CUDA backend, as `pipec emit --target cuda` writes
// them next to the Program tables: per rank, the commands its host thread
// enqueues in order (compiler/codegen/StreamLowering.h explains the lowering).
// Streams of a rank: 0 compute, 1 expert communication (the all-to-alls of
// overlap pairs), 2.. one per point-to-point channel. Events are per rank,
// each recorded once per step before any wait on it.
#pragma once

#include <cstdint>

namespace pipert {

enum class StreamCmd : uint8_t { Run = 0, Send = 1, Recv = 2, Record = 3, Wait = 4 };

// What a Run executes: the whole op, or one sub-operation of a pair's half.
enum class RunPart : uint8_t { Whole = 0, Attention = 1, Dispatch = 2, Mlp = 3, Combine = 4 };

constexpr uint16_t kComputeStream = 0;
constexpr uint16_t kExpertStream = 1;

struct StreamCommand {
  StreamCmd cmd;
  RunPart part;    // Run only
  uint16_t stream;
  uint32_t arg;    // Run: op index; Send/Recv: message id; Record/Wait: event id
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

} // namespace pipert
