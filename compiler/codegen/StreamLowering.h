// Lowers a checked schedule to per-rank stream programs for the CUDA backend:
// the list of commands one rank's host thread enqueues, in order, onto its
// streams. Streams of a rank:
//   0       the compute stream: every op, and the compute sub-operations
//           (attention, MLP) of overlap pairs;
//   1       the expert-communication stream: the dispatch and combine
//           all-to-alls of overlap pairs, so they run under the other half's
//           compute (DeepSeek-V3 report, Figure 4);
//   2 + c   one stream per point-to-point channel the rank sends or receives
//           on (comm/CommPlan.h: each (sender, receiver, kind) is a channel
//           with its own in-order stream on both ends);
//   last    on a rank with memory ops (Offload/Reload, BPipe's Evict/Hold/
//           Return/Load), its copy stream, after the channels: each copy
//           waits for the compute stream's work before it in program order,
//           and a Hold or Load for its message's receive. The compute
//           stream's next forward (F, R) waits for the copies before it that
//           take an activation off the rank (Offload, Evict, Return), and its
//           next backward (B, I, W) for those that put one on it (Reload,
//           Load, Hold): an activation leaves the device before the rank
//           stores another, and arrives before one is freed or used, so the
//           device never holds more than check/Memory.cpp's program-order
//           count, and reaches it. An Evict's or Return's send waits for the
//           copy. (The simulator lets an F start under an Offload; the
//           programs are the stricter order.)
// Every cross-stream edge is an event: recorded once per step, on the stream
// that produces, and waited on by the stream that consumes, after the record in
// the command order (a CUDA wait on an event not yet recorded would not wait).
//
// Overlap pairs follow cost/OverlapPlan.h's two-stream plan under the schedule's
// cost model, so the program runs what the simulator predicts. A pair is a
// fork-join region: the communication stream first waits for the compute
// stream's earlier work, and the compute stream ends the pair waiting for it.
//
// Sends are posted in the rank's proved send order, each as soon as its op is
// done; receives in the proved receive order (each channel in its sender's
// order), each just before the first step that needs it or a message after it
// on its channel, exactly where comm/CommPlan.h posts it. A message received
// before its own op keeps its buffer until that op runs: the op waits on the
// event recorded after its receive, wherever that receive was posted.
// The commands, parts and stream numbers are the runtime's own definitions
// (pipert/StreamProgram.h), so the lowering and the interpreter cannot drift.
#pragma once

#include "check/Checks.h"
#include "elab/ScheduleIR.h"
#include "cost/CostModel.h"

#include "pipert/StreamProgram.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pipec {

using pipert::kComputeStream;
using pipert::kExpertStream;
using pipert::kFirstChannelStream;
using pipert::runPartName;
using pipert::RunPart;
using pipert::StreamCmd;
using pipert::streamCmdName;
using pipert::StreamCommand;

// The point-to-point channel a stream 2.. carries, seen from its rank.
struct StreamChannel {
  int32_t peer;   // the other rank
  bool sends;     // this rank sends on it (else receives)
  bool gradient;  // gradients (else activations, or BPipe's evicted or returned ones)
};

// A step of the rank: one op, or the two ops of an overlap pair, and where its
// commands start (a step's commands run up to the next step's first).
struct StreamStep {
  uint32_t firstCommand;
  uint32_t firstOp, lastOp;
};

struct RankStreamProgram {
  std::vector<StreamCommand> commands;
  uint16_t numStreams = kFirstChannelStream;
  uint32_t numEvents = 0;
  uint32_t numPairs = 0;
  std::vector<StreamChannel> channels; // stream kFirstChannelStream + i carries channels[i]
  uint16_t copyStream = 0;             // the memory ops' stream; 0: the rank has none
  std::vector<StreamStep> steps;
};

// The cost model the overlap plans use: the schedule's costs and `overrides`,
// and for a stage with no sub-operation costs a default split — attention and
// MLP half of F (or B) each, dispatch and combine a quarter each — so that the
// all-to-alls have compute to hide under (all-zero costs would run one half of
// every pair after the other). Measured costs (`--cost attn_f=...`) replace it.
// It keeps what went into it, so an emitted program can say.
struct StreamPlanCosts {
  CostModel model;
  std::vector<CostOverride> overrides;   // --costs then --cost, as given
  std::vector<int64_t> defaultSplitStages; // stages that got the default split
};
StreamPlanCosts streamPlanCosts(const ScheduleIR &ir, std::vector<CostOverride> overrides);

// Requires report.ok (and so report.comm).
std::vector<RankStreamProgram> lowerToStreams(const ScheduleIR &ir, const CheckReport &report,
                                              const CostModel &costs);

} // namespace pipec
