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
//           with its own in-order stream on both ends).
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
// done; receives in the proved receive order, each just before the first op
// that needs it (posting order within a channel is what the deadlock check
// proved; the placement only decides how early the host enqueues them).
#pragma once

#include "check/Checks.h"
#include "elab/ScheduleIR.h"
#include "cost/CostModel.h"

#include <cstdint>
#include <vector>

namespace pipec {

enum class StreamCmd : uint8_t { Run, Send, Recv, Record, Wait };

// What a Run executes: the whole op (F, B, I or W), or one sub-operation of an
// overlap pair's half.
enum class RunPart : uint8_t { Whole, Attention, Dispatch, Mlp, Combine };

inline constexpr uint16_t kComputeStream = 0;
inline constexpr uint16_t kExpertStream = 1;
inline constexpr uint16_t kFirstChannelStream = 2;

struct StreamCommand {
  StreamCmd cmd;
  RunPart part;    // Run only
  uint16_t stream;
  uint32_t arg;    // Run: op index; Send/Recv: message id; Record/Wait: event id
};

struct RankStreamProgram {
  std::vector<StreamCommand> commands;
  uint16_t numStreams = kFirstChannelStream;
  uint32_t numEvents = 0;
  uint32_t numPairs = 0;
};

// The cost model the overlap plans use: the schedule's costs and `overrides`,
// and for a stage with no sub-operation costs a default split — attention and
// MLP half of F (or B) each, dispatch and combine a quarter each — so that the
// all-to-alls have compute to hide under (all-zero costs would run one half of
// every pair after the other). Measured costs (`--cost attn_f=...`) replace it.
CostModel streamPlanCosts(const ScheduleIR &ir, std::vector<CostOverride> overrides);

// Requires report.ok (and so report.comm).
std::vector<RankStreamProgram> lowerToStreams(const ScheduleIR &ir, const CheckReport &report,
                                              const CostModel &costs);

// Short names, as the emitted CUDA program spells the commands.
const char *streamCmdName(StreamCmd cmd); // "Run", "Send", "Recv", "Rec", "Wait"
const char *runPartName(RunPart part);    // "All", "Attn", "Disp", "Mlp", "Comb"

} // namespace pipec
