// The abstract syntax tree of a .pipe file: pipec's own types, no ANTLR.
//
// Every node carries the source range it came from, so every later phase can point
// at the text. Variables are declared by VarDecl; the name resolver (sema/) gives
// each one a dense id, which NameRef nodes then carry, so elaboration evaluates
// names by indexing an array instead of looking up strings.
#pragma once

#include "llvm/Support/SMLoc.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pipec::ast {

using llvm::SMRange;

// ---- variables --------------------------------------------------------------

enum class VarRole : uint8_t { Parameter, Let, LoopVar, RankVar, StageVar };

struct VarDecl {
  std::string name;
  SMRange range; // the name where it is declared
  VarRole role = VarRole::Let;
  int id = -1; // dense id, assigned by the name resolver
};

// ---- expressions ------------------------------------------------------------

// Float appears only in cost expressions (`B = 2.5 * v;`); Pending only in rank
// programs, where it reads the rank's state as elaboration reaches it.
enum class ExprKind : uint8_t { Int, Name, Unary, Binary, Conditional, Call, Float, Pending };
enum class UnaryOp : uint8_t { Neg, Not };
enum class BinaryOp : uint8_t { Mul, Div, Mod, Add, Sub, Lt, Le, Gt, Ge, Eq, Ne, And, Or };
enum class Builtin : uint8_t { Min, Max };

struct Expr {
  explicit Expr(ExprKind kind, SMRange range) : kind(kind), range(range) {}
  virtual ~Expr() = default;
  const ExprKind kind;
  SMRange range;
};
using ExprPtr = std::unique_ptr<Expr>;

struct IntLit : Expr {
  IntLit(SMRange range, int64_t value) : Expr(ExprKind::Int, range), value(value) {}
  int64_t value;
};

struct NameRef : Expr {
  NameRef(SMRange range, std::string name) : Expr(ExprKind::Name, range), name(std::move(name)) {}
  std::string name;
  int varId = -1; // filled by the name resolver
};

struct Unary : Expr {
  Unary(SMRange range, UnaryOp op, ExprPtr operand)
      : Expr(ExprKind::Unary, range), op(op), operand(std::move(operand)) {}
  UnaryOp op;
  ExprPtr operand;
};

struct Binary : Expr {
  Binary(SMRange range, BinaryOp op, ExprPtr lhs, ExprPtr rhs)
      : Expr(ExprKind::Binary, range), op(op), lhs(std::move(lhs)), rhs(std::move(rhs)) {}
  BinaryOp op;
  ExprPtr lhs, rhs;
};

struct Conditional : Expr {
  Conditional(SMRange range, ExprPtr cond, ExprPtr then, ExprPtr otherwise)
      : Expr(ExprKind::Conditional, range), cond(std::move(cond)), then(std::move(then)),
        otherwise(std::move(otherwise)) {}
  ExprPtr cond, then, otherwise;
};

struct Call : Expr {
  Call(SMRange range, Builtin fn, std::vector<ExprPtr> args)
      : Expr(ExprKind::Call, range), fn(fn), args(std::move(args)) {}
  Builtin fn;
  std::vector<ExprPtr> args;
};

struct FloatLit : Expr {
  FloatLit(SMRange range, double value) : Expr(ExprKind::Float, range), value(value) {}
  double value;
};

// R replays a forward before its backward (recomputation): its F kept only the
// stage input, and R rebuilds the activation its B or I needs.
// Memory ops move a forward's activation out of device memory and back before
// its backward. Offload / Reload copy it to host memory and back on the rank's
// copy stream. BPipe's transfer between ranks takes four ops, two a side, so
// both ends of each message are written and the deadlock check sees them: the
// owner's Evict sends it to a partner rank, whose Hold receives and keeps it;
// the partner's Return sends it back, and the owner's Load receives it.
// The numbering is part of the IR (and the JSON export's kind names): append only.
enum class OpKind : uint8_t { F, B, I, W, R, Offload, Reload, Evict, Hold, Return, Load };
constexpr int kNumOpKinds = 11;

// Ops that run on a rank's copy stream rather than its compute stream.
inline bool isMemoryOp(OpKind kind) { return kind >= OpKind::Offload; }
// Memory ops that name a partner rank (`to = r` / `from = r`).
inline bool isTransferOp(OpKind kind) { return kind >= OpKind::Evict; }
// Transfer ops written on the partner: their chunk is the owner's chunk.
inline bool isPartnerOp(OpKind kind) { return kind == OpKind::Hold || kind == OpKind::Return; }
// Transfer ops that send (the others receive).
inline bool isTransferSend(OpKind kind) { return kind == OpKind::Evict || kind == OpKind::Return; }

// `pending(W)`, `pending(F, c)`: how many ops of a kind the rank still owes at
// this point of its program (F: forwards not yet run; B: forwards whose backward
// has not run; W: input-gradient halves whose W has not run), on every chunk or
// on chunk `chunk`. Deterministic: it reads the elaborator's own bookkeeping.
struct Pending : Expr {
  Pending(SMRange range, OpKind op, ExprPtr chunk)
      : Expr(ExprKind::Pending, range), op(op), chunk(std::move(chunk)) {}
  OpKind op;
  ExprPtr chunk; // null: every chunk of the rank
};

// ---- statements (rank programs) ----------------------------------------------

struct OpCall {
  OpKind kind = OpKind::F;
  SMRange range;
  ExprPtr chunk; // null: chunk 0 (or, for W, the oldest deferred I on the rank)
  ExprPtr mb;    // null: the chunk's next micro-batch (or oldest deferred I for W)
  ExprPtr peer;  // transfer ops only: the partner rank (`to = E` / `from = E`)
};

enum class StmtKind : uint8_t { Let, For, If, Op, Block };

struct Stmt {
  explicit Stmt(StmtKind kind, SMRange range) : kind(kind), range(range) {}
  virtual ~Stmt() = default;
  const StmtKind kind;
  SMRange range;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Block = std::vector<StmtPtr>;

struct LetStmt : Stmt {
  LetStmt(SMRange range) : Stmt(StmtKind::Let, range) {}
  VarDecl var;
  ExprPtr value;
};

struct ForStmt : Stmt {
  ForStmt(SMRange range) : Stmt(StmtKind::For, range) {}
  VarDecl var;
  ExprPtr lo, hi; // half-open: lo..hi
  Block body;
};

struct IfStmt : Stmt {
  IfStmt(SMRange range) : Stmt(StmtKind::If, range) {}
  ExprPtr cond;
  Block then;
  Block otherwise; // `else if` is an otherwise block holding one IfStmt
};

// One op, or an overlap pair `X & Y` (ops.size() == 2).
struct OpStmt : Stmt {
  OpStmt(SMRange range) : Stmt(StmtKind::Op, range) {}
  std::vector<OpCall> ops;
};

// The expansion of a call to an op-sequence `def` (`warmup(P - r - 1);`): its own
// scope, so that the definition's lets do not leak into the caller's block.
struct BlockStmt : Stmt {
  BlockStmt(SMRange range) : Stmt(StmtKind::Block, range) {}
  std::string def; // the definition expanded here
  Block body;
};

// ---- declarations --------------------------------------------------------------

struct Param {
  VarDecl var;
  int64_t defaultValue = 0;
  SMRange valueRange;
};

struct Require {
  SMRange range;
  ExprPtr cond;
  std::optional<std::string> message;
};

// `place stage s -> rank E chunk E;`
struct Placement {
  SMRange range;
  VarDecl stageVar;
  ExprPtr rank;
  ExprPtr chunk; // null: chunk 0
};

// `flow NAME: microbatches lo..hi { place ...; }`
struct FlowDecl {
  SMRange range;
  std::string name;
  SMRange nameRange;
  ExprPtr lo, hi;
  std::vector<Placement> placements; // exactly one after a clean parse
};

// `NAME = 1.5;` or `NAME[stage] = 1.5;` inside `costs { }`
struct CostEntry {
  SMRange range;
  std::string name;
  SMRange nameRange;
  ExprPtr stage; // null: applies to every stage
  double value = 0;
  // A cost written as an expression over parameters and lets (`B = 2.5 * v;`),
  // evaluated at elaboration; null for a plain number, which is `value`.
  ExprPtr valueExpr;
};

struct RankProgram {
  SMRange range;     // the whole block
  SMRange headRange; // `rank r` or `rank 3`
  bool generic = false;
  VarDecl var;       // generic: the rank variable
  ExprPtr index;     // explicit: the rank number
  Block body;
  // `rank r greedy limit E { entries }`: the elaborator list-schedules every rank
  // at once (elab/GreedyScheduler.h). Each entry is in `body`, as the OpStmt of
  // one op or as an IfStmt whose `then` holds that OpStmt (`op if cond;`), in
  // priority order; `limit` bounds a rank's live activations (null: no bound).
  bool greedy = false;
  SMRange greedyRange; // the word `greedy`
  ExprPtr limit;
};

// A declaration that has a value (`ranks E;`), remembered with where it was written.
struct Sized {
  SMRange range;
  ExprPtr value;
};

// `domain P in lo..hi;` (half-open) or `domain v in {1, 2, 4};`: the values a
// parameter takes when the schedule family is checked. Bounds and items may use
// parameters whose domains are declared earlier.
struct DomainDecl {
  SMRange range;
  std::string name;
  SMRange nameRange;
  int paramIndex = -1;         // into Schedule::params, set by the name resolver
  ExprPtr lo, hi;              // a range; both null for a list
  ExprPtr step;                // `lo..hi step E`: every E-th value from lo; null: 1
  std::vector<ExprPtr> items;  // a list
  SMRange valuesRange;         // the text after `in`
  bool isRange() const { return lo != nullptr; }
};

// `sizes i -> E;` or `sizes {4, 4, 2};`: each micro-batch's size, in units of the
// size every cost and activation is given for (1 when not declared). Costs and
// activation memory of micro-batch i scale by its size.
struct SizesDecl {
  SMRange range;
  VarDecl var;                // the index, in `sizes i -> E`
  ExprPtr value;              // `-> E`; null for a list
  std::vector<ExprPtr> items; // a list, one per micro-batch
};

// `squeeze;` or `squeeze limit E;`: after the rank programs, the elaborator
// compacts the whole schedule (elab/Squeeze.h): in global time order each op
// moves to the earliest free slot its dependencies allow while every rank's
// live activations stay within E (default: the schedule's highest peak as
// written), and W's fill the free slots.
struct SqueezeDecl {
  SMRange range;
  ExprPtr limit; // null: the written schedule's highest peak
};

// Top-level lets and requires run in source order once parameters are bound.
struct GlobalItem {
  std::unique_ptr<LetStmt> let; // exactly one of the two is set
  std::unique_ptr<Require> require;
};

struct Schedule {
  std::string name;
  SMRange nameRange;
  SMRange range;
  std::vector<Param> params;
  std::vector<GlobalItem> globals;
  std::optional<Sized> ranks, stages, microbatches, copies;
  std::optional<Placement> placement; // top-level place (a single implicit flow)
  std::vector<FlowDecl> flows;
  std::vector<CostEntry> costs;
  std::vector<RankProgram> rankPrograms;
  std::vector<DomainDecl> domains; // in declaration order
  std::optional<SizesDecl> sizes;
  std::optional<SqueezeDecl> squeeze;
  int numVars = 0; // set by the name resolver: ids are 0..numVars-1
};

const char *opKindName(OpKind kind);

} // namespace pipec::ast
