// Runs one rank's program: expands loops, ifs and lets, and turns each op
// statement into resolved IR ops (chunk, stage, micro-batch and flow decided,
// W matched to its I). Errors name the rank and loop iteration they happened in.
#pragma once

#include "elab/Elaborator.h"
#include "elab/Evaluator.h"
#include "elab/ScheduleIR.h"
#include "elab/SlotTable.h"

#include <unordered_map>

namespace pipec {

// Counts shared by all ranks, checked against ElabLimits.
struct ElabBudget {
  ElabLimits limits;
  uint64_t ops = 0;
  uint64_t iterations = 0;
  bool exhausted = false; // a limit was hit: stop elaborating altogether
  uint32_t opsSinceClock = 0; // ops since limits.deadline was last compared with the clock
  // Ids of ScheduleIR::origins and ScheduleIR::loops, so ops store 32-bit ids.
  std::unordered_map<const ast::OpCall *, uint32_t> originIds;
  std::unordered_map<const ast::ForStmt *, uint32_t> loopIds;

  // Counts `n` more iterations of a pass that loops outside rank programs
  // (greedy scheduling, squeeze). Past the limit it reports, once,
  // IterationLimitExceeded at `at`: "<who> examined more than <limit> <units>",
  // marks the budget exhausted and returns false.
  bool spend(uint64_t n, DiagnosticEngine &diags, llvm::SMRange at, const std::string &who,
             const char *units);
};

class RankInterpreter : private PendingState {
public:
  RankInterpreter(ScheduleIR &ir, Evaluator &eval, DiagnosticEngine &diags, ElabBudget &budget)
      : ir_(ir), eval_(eval), diags_(diags), budget_(budget) {}

  // Appends rank `rank`'s ops to ir.ranks[rank]. Returns false after an error.
  bool run(int64_t rank, const ast::RankProgram &program, RankSlots &slots);

  // Greedy list scheduling (GreedyScheduler.cpp) drives one op at a time: it
  // enters a rank (so pending() and the rank variable read that rank), asks
  // which op an entry would run next, and appends it.
  struct NextOp {
    bool exists = false; // false: the chunk has no such op left
    int32_t chunk = 0, stage = 0, microbatch = 0;
  };
  void enterRank(int64_t rank, const ast::RankProgram &program, RankSlots &slots);
  void leaveRank();
  bool peek(const ast::OpCall &call, NextOp &out);
  bool emit(const ast::OpStmt &s) { return opStatement(s); }

private:
  struct LoopLevel {
    const ast::ForStmt *loop;
    int64_t value;
    uint32_t frame; // 0 until an op inside needs it
  };

  bool block(const ast::Block &stmts);
  bool stmt(const ast::Stmt &s);
  bool loop(const ast::ForStmt &s);
  bool opStatement(const ast::OpStmt &s);
  bool resolve(const ast::OpCall &call, Op &op);
  bool resolveW(const ast::OpCall &call, Op &op, bool hasChunk, int64_t chunk);
  bool resolveMemoryOp(const ast::OpCall &call, Op &op, int64_t chunk);
  bool evalMicrobatch(const ast::OpCall &call, int64_t &mb);
  SlotState *slotFor(const ast::OpCall &call, int64_t chunk);
  uint32_t currentFrame(size_t depth);
  uint32_t originId(const ast::OpCall &call);
  Diagnostic *error(DiagKind kind, llvm::SMRange at, std::string message);
  bool pending(const ast::Pending &e, bool hasChunk, int64_t chunk, int64_t &out) override;
  void addContext(Diagnostic &d);

  ScheduleIR &ir_;
  Evaluator &eval_;
  DiagnosticEngine &diags_;
  ElabBudget &budget_;

  int64_t rank_ = 0;
  RankSlots *slots_ = nullptr;
  std::vector<LoopLevel> loops_;
  std::vector<const ast::BlockStmt *> expansions_; // the def calls being run, outermost first
  uint64_t deferredSequence_ = 0;
  int32_t resolvedPeer_ = -1; // the partner rank of the transfer op resolve() just resolved
};

} // namespace pipec
