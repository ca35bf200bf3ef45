// The elaborated schedule: for every rank, the ordered list of ops it runs, with
// every implicit choice (chunk, micro-batch, which I a W completes) made explicit.
// This is the structure every later phase reads: checks, simulator, emitters.
#pragma once

#include "syntax/AST.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pipec {

using ast::OpKind;

// Overlap pairs are two adjacent ops: First is always the forward.
enum class PairRole : uint8_t { None, First, Second };

// One per op of the schedule, the largest array of a run: keep it small.
struct Op {
  OpKind kind : 4;
  PairRole pair : 2;
  uint32_t flow : 25;          // flows come from placement declarations: few
  // On a pair's First op: the pair was written backward first (`B & F`). It
  // changes nothing but how writers print the pair, which keep it as written.
  uint32_t backwardWrittenFirst : 1;
  int32_t chunk;
  int32_t stage;
  int32_t microbatch;          // global id, 0..microbatches-1
  uint32_t iteration;          // ScheduleIR::iterations index; 0 = outside any loop
  uint32_t origin;             // ScheduleIR::origins index: where the op was written
};
static_assert(sizeof(Op) == 24, "one per op: keep it compact");

// The partner rank of a transfer op (Evict, Hold, Return, Load): kept beside the
// op list rather than in Op, so that schedules without transfers pay nothing.
// For every op, `stage` and `microbatch` name the activation it moves; on the
// partner's Hold and Return, `chunk` is the owner's chunk (the partner holds no
// slot of that stage).
struct OpPeer {
  uint32_t op;  // index in the rank's op list
  int32_t rank; // the partner: Evict/Return send to it, Hold/Load receive from it
};

// A parameter slot: chunk `chunk` of rank `rank` holds one stage's weights.
struct Slot {
  int32_t rank;
  int32_t chunk;
};

struct Flow {
  std::string name;
  int64_t begin, end;             // micro-batches [begin, end)
  std::vector<Slot> stageSlots;   // stage -> slot
  const ast::Placement *placement = nullptr; // where the placement was written
};

// One loop iteration an op was emitted in; `parent` is the enclosing loop's.
struct IterationFrame {
  uint32_t parent;
  uint32_t loop; // ScheduleIR::loops index
  int64_t value;
};

struct RankOps {
  const ast::RankProgram *program = nullptr;
  std::vector<Op> ops;
  std::vector<OpPeer> peers; // transfer ops' partners, by ascending op index
  // The partner rank of ops[index] (a transfer op); -1 for any other op.
  int32_t peerOf(uint32_t index) const;
};

struct CostSetting {
  std::string name;
  int64_t stage; // -1: every stage
  double value;
  const ast::CostEntry *origin;
};

struct ScheduleIR {
  std::string name;
  std::vector<std::pair<std::string, int64_t>> params; // bound values, declaration order
  int64_t numRanks = 0, numStages = 0, numMicrobatches = 0, copies = 1;
  std::vector<Flow> flows;
  std::vector<RankOps> ranks;
  std::vector<IterationFrame> iterations{{0, 0, 0}};
  std::vector<const ast::ForStmt *> loops{nullptr}; // loops that emitted an op
  std::vector<const ast::OpCall *> origins;          // op statements that emitted an op
  std::vector<CostSetting> costs;
  // Each micro-batch's size (`sizes`), in units of the size costs and activations
  // are given for; empty when the schedule declares none (every size is 1).
  std::vector<int64_t> microbatchSizes;
  const ast::Schedule *source = nullptr; // the AST it came from (for locations)

  size_t totalOps() const;
  int64_t sizeOf(int64_t microbatch) const {
    return microbatchSizes.empty() ? 1 : microbatchSizes[size_t(microbatch)];
  }
  const ast::OpCall &originOf(const Op &op) const { return *origins[op.origin]; }
  int64_t indexInFlow(const Op &op) const { return op.microbatch - flows[op.flow].begin; }
  // "i = 3, j = 0" for an op's loop iterations, outermost first; "" outside loops.
  // Also "" once releaseIterations dropped the records.
  std::string describeIteration(uint32_t iteration) const;
  // Frees the loop-iteration records (one per loop iteration that emitted an op):
  // only diagnostics read them, and nothing after the checks reports at an op.
  void releaseIterations();
};

} // namespace pipec
