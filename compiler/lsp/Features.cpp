#include "lsp/Features.h"

#include "elab/Evaluator.h"

#include "llvm/Support/SourceMgr.h"

#include <map>

namespace pipec::lsp {

using namespace pipec::ast;
using llvm::json::Array;
using llvm::json::Object;
using llvm::json::Value;

Value rangeOf(const Document &document, llvm::SMRange range) {
  std::optional<size_t> start = document.offsetOf(range.Start);
  std::optional<size_t> end = document.offsetOf(range.End);
  size_t from = start.value_or(0), to = std::max(from, end.value_or(from));
  auto position = [&](size_t offset) {
    Position p = document.lines->positionOf(offset);
    return Object{{"line", p.line}, {"character", p.character}};
  };
  return Object{{"start", position(from)}, {"end", position(to)}};
}

Array diagnosticsOf(const Document &document) {
  Array out;
  for (const Diagnostic &d : document.compilation->diags().diagnostics()) {
    std::string message = d.message;
    Array related;
    for (const DiagNote &note : d.notes) {
      if (note.range.Start.isValid())
        related.push_back(Object{
            {"location", Object{{"uri", document.uri}, {"range", rangeOf(document, note.range)}}},
            {"message", note.message}});
      else
        message += "\nnote: " + note.message;
    }
    if (d.repeats > 0)
      message += "\n(and " + std::to_string(d.repeats) + " more times at this place)";
    int severity = d.severity == Severity::Error ? 1 : d.severity == Severity::Warning ? 2 : 3;
    Object diagnostic{{"range", rangeOf(document, d.range)},
                      {"severity", severity},
                      {"code", diagInfo(d.kind).name},
                      {"source", "pipec"},
                      {"message", message}};
    if (!related.empty())
      diagnostic["relatedInformation"] = std::move(related);
    out.push_back(std::move(diagnostic));
  }
  return out;
}

namespace {

bool contains(llvm::SMRange range, const char *at) {
  return range.Start.isValid() && range.Start.getPointer() <= at && at < range.End.getPointer();
}

std::string textOf(llvm::SMRange range) {
  if (!range.Start.isValid() || !range.End.isValid())
    return "";
  return std::string(range.Start.getPointer(), range.End.getPointer());
}

// Every declaration, name use and op of a schedule, found in one walk.
struct SymbolIndex {
  struct Symbol {
    const VarDecl *decl = nullptr;
    const Expr *value = nullptr;          // a let's expression
    const ForStmt *loop = nullptr;        // a loop variable's loop
    const RankProgram *program = nullptr; // a let directly in this rank program
    bool global = false;                  // a top-level let
  };
  std::vector<Symbol> symbols;
  std::vector<std::pair<llvm::SMRange, int>> references; // name use -> variable id
  std::vector<const OpCall *> ops;

  void declare(const VarDecl &decl, Symbol symbol) {
    symbol.decl = &decl;
    symbols.push_back(symbol);
  }
  void declare(const VarDecl &decl) { declare(decl, Symbol()); }

  void expr(const Expr *e) {
    if (!e)
      return;
    switch (e->kind) {
    case ExprKind::Int: case ExprKind::Float: break;
    case ExprKind::Pending: expr(static_cast<const Pending *>(e)->chunk.get()); break;
    case ExprKind::Name: {
      auto *name = static_cast<const NameRef *>(e);
      references.emplace_back(name->range, name->varId);
      break;
    }
    case ExprKind::Unary: expr(static_cast<const Unary *>(e)->operand.get()); break;
    case ExprKind::Binary:
      expr(static_cast<const Binary *>(e)->lhs.get());
      expr(static_cast<const Binary *>(e)->rhs.get());
      break;
    case ExprKind::Conditional: {
      auto *c = static_cast<const Conditional *>(e);
      expr(c->cond.get());
      expr(c->then.get());
      expr(c->otherwise.get());
      break;
    }
    case ExprKind::Call:
      for (const ExprPtr &arg : static_cast<const Call *>(e)->args)
        expr(arg.get());
      break;
    }
  }

  void block(const Block &stmts, const RankProgram *program) {
    for (const StmtPtr &stmt : stmts) {
      switch (stmt->kind) {
      case StmtKind::Let: {
        auto *let = static_cast<const LetStmt *>(stmt.get());
        expr(let->value.get());
        declare(let->var, {nullptr, let->value.get(), nullptr, program, false});
        break;
      }
      case StmtKind::For: {
        auto *loop = static_cast<const ForStmt *>(stmt.get());
        expr(loop->lo.get());
        expr(loop->hi.get());
        declare(loop->var, {nullptr, nullptr, loop, nullptr, false});
        block(loop->body, nullptr);
        break;
      }
      case StmtKind::If: {
        auto *branch = static_cast<const IfStmt *>(stmt.get());
        expr(branch->cond.get());
        block(branch->then, nullptr);
        block(branch->otherwise, nullptr);
        break;
      }
      case StmtKind::Op:
        for (const OpCall &op : static_cast<const OpStmt *>(stmt.get())->ops) {
          ops.push_back(&op);
          expr(op.chunk.get());
          expr(op.mb.get());
          expr(op.peer.get());
        }
        break;
      case StmtKind::Block: // a def's expansion: its ops hover where the def writes them
        block(static_cast<const BlockStmt *>(stmt.get())->body, nullptr);
        break;
      }
    }
  }

  void placement(const Placement &place) {
    declare(place.stageVar);
    expr(place.rank.get());
    expr(place.chunk.get());
  }

  explicit SymbolIndex(const Schedule &schedule) {
    for (const Param &param : schedule.params)
      declare(param.var);
    for (const GlobalItem &item : schedule.globals) {
      if (item.let) {
        expr(item.let->value.get());
        declare(item.let->var, {nullptr, item.let->value.get(), nullptr, nullptr, true});
      } else if (item.require) {
        expr(item.require->cond.get());
      }
    }
    for (const auto *sized : {&schedule.ranks, &schedule.stages, &schedule.microbatches,
                              &schedule.copies})
      if (*sized)
        expr((*sized)->value.get());
    if (schedule.placement)
      placement(*schedule.placement);
    for (const FlowDecl &flow : schedule.flows) {
      expr(flow.lo.get());
      expr(flow.hi.get());
      for (const Placement &place : flow.placements)
        placement(place);
    }
    for (const CostEntry &cost : schedule.costs) {
      expr(cost.stage.get());
      expr(cost.valueExpr.get());
    }
    if (schedule.sizes) {
      if (schedule.sizes->value)
        declare(schedule.sizes->var);
      expr(schedule.sizes->value.get());
      for (const ExprPtr &item : schedule.sizes->items)
        expr(item.get());
    }
    if (schedule.squeeze)
      expr(schedule.squeeze->limit.get());
    for (const RankProgram &program : schedule.rankPrograms) {
      if (program.generic)
        declare(program.var);
      expr(program.index.get());
      block(program.body, &program);
    }
  }

  const Symbol *symbolOfId(int id) const {
    for (const Symbol &symbol : symbols)
      if (symbol.decl->id == id && id >= 0)
        return &symbol;
    return nullptr;
  }

  // The symbol whose declaration or use is at `at`.
  const Symbol *symbolAt(const char *at) const {
    for (const Symbol &symbol : symbols)
      if (contains(symbol.decl->range, at))
        return &symbol;
    for (const auto &[range, id] : references)
      if (contains(range, at))
        return symbolOfId(id);
    return nullptr;
  }
};

// Values of top-level names at the parameters the IR was elaborated with.
class Values {
public:
  Values(const Schedule &schedule, const ScheduleIR &ir, llvm::SourceMgr &sources)
      : scratch_(sources), env_(size_t(schedule.numVars), 0),
        eval_(env_, scratch_) {
    for (size_t i = 0; i < schedule.params.size() && i < ir.params.size(); ++i)
      set(schedule.params[i].var, ir.params[i].second);
    for (const GlobalItem &item : schedule.globals)
      if (item.let)
        evalLet(*item.let);
  }

  std::optional<int64_t> valueOf(const VarDecl &var) const {
    if (var.id < 0 || size_t(var.id) >= known_.size() || !known_[size_t(var.id)])
      return std::nullopt;
    return env_[size_t(var.id)];
  }

  // The value of a let written directly in `program`, on `rank`.
  std::optional<int64_t> onRank(const RankProgram &program, int64_t rank, const VarDecl &let) {
    if (program.generic)
      set(program.var, rank);
    for (const StmtPtr &stmt : program.body) {
      if (stmt->kind != StmtKind::Let)
        continue;
      auto *l = static_cast<const LetStmt *>(stmt.get());
      if (!evalLet(*l))
        return std::nullopt;
      if (&l->var == &let)
        return env_[size_t(let.id)];
    }
    return std::nullopt;
  }

private:
  void set(const VarDecl &var, int64_t value) {
    if (var.id < 0 || size_t(var.id) >= env_.size())
      return;
    env_[size_t(var.id)] = value;
    known_.resize(env_.size(), false);
    known_[size_t(var.id)] = true;
  }
  bool evalLet(const LetStmt &let) {
    int64_t value;
    if (!let.value || !eval_.eval(*let.value, value))
      return false;
    set(let.var, value);
    return true;
  }

  DiagnosticEngine scratch_; // evaluation errors here were already reported by check
  std::vector<int64_t> env_;
  std::vector<bool> known_;
  Evaluator eval_;
};

constexpr size_t kMaxHoverRanks = 16;
constexpr size_t kMaxOpsPerRank = 8;

std::string describeSymbol(const Document &document, const SymbolIndex::Symbol &symbol) {
  const Schedule &schedule = *document.compilation->ast();
  const ScheduleIR *ir = document.compilation->ir();
  const VarDecl &var = *symbol.decl;
  std::string name = "`" + var.name + "`";
  switch (var.role) {
  case VarRole::Parameter:
    for (size_t i = 0; i < schedule.params.size(); ++i)
      if (&schedule.params[i].var == &var)
        return "parameter " + name + " = " +
               std::to_string(ir && i < ir->params.size() ? ir->params[i].second
                                                          : schedule.params[i].defaultValue) +
               " (default)";
    return "parameter " + name;
  case VarRole::RankVar:
    return "rank variable " + name +
           (ir ? ": 0.." + std::to_string(ir->numRanks - 1) : std::string());
  case VarRole::StageVar:
    return "stage variable " + name +
           (ir ? ": 0.." + std::to_string(ir->numStages - 1) : std::string());
  case VarRole::LoopVar:
    return "loop variable " + name + " in `" + textOf(symbol.loop->lo->range) + ".." +
           textOf(symbol.loop->hi->range) + "`";
  case VarRole::Let:
    break;
  }
  std::string text = "let " + name + " = `" + (symbol.value ? textOf(symbol.value->range) : "") + "`";
  if (!ir)
    return text;
  Values values(schedule, *ir, document.compilation->sources());
  if (symbol.global) {
    if (std::optional<int64_t> value = values.valueOf(var))
      text += " = " + std::to_string(*value);
    return text;
  }
  if (!symbol.program)
    return text + " (its value changes from iteration to iteration)";
  const RankProgram &program = *symbol.program;
  std::vector<int64_t> ranks;
  if (program.generic) {
    for (int64_t r = 0; r < ir->numRanks && ranks.size() < kMaxHoverRanks; ++r)
      ranks.push_back(r);
  } else {
    for (size_t r = 0; r < ir->ranks.size(); ++r)
      if (ir->ranks[r].program == &program)
        ranks.push_back(int64_t(r));
  }
  text += "\n";
  for (int64_t r : ranks)
    if (std::optional<int64_t> value = values.onRank(program, r, var))
      text += "\n- rank " + std::to_string(r) + ": " + std::to_string(*value);
  if (program.generic && ir->numRanks > int64_t(kMaxHoverRanks))
    text += "\n- ...";
  return text;
}

std::string describeOp(const Document &document, const OpCall &call) {
  const ScheduleIR *ir = document.compilation->ir();
  std::string text = "op `" + textOf(call.range) + "`";
  if (!ir)
    return text + ": not elaborated (the schedule has errors)";
  text += " at the default parameters";
  for (const auto &[name, value] : ir->params)
    text += (&name == &ir->params.front().first ? " (" : ", ") + name + " = " +
            std::to_string(value);
  text += ir->params.empty() ? ":\n" : "):\n";
  size_t ranksShown = 0, ranksLeft = 0;
  for (size_t r = 0; r < ir->ranks.size(); ++r) {
    size_t count = 0;
    std::string line;
    for (const Op &op : ir->ranks[r].ops) {
      if (&ir->originOf(op) != &call)
        continue;
      if (++count > kMaxOpsPerRank)
        continue;
      std::string iteration = ir->describeIteration(op.iteration);
      line += "\n  - " + std::string(opKindName(op.kind)) + std::to_string(op.chunk) + "." +
              std::to_string(ir->indexInFlow(op)) + ", stage " + std::to_string(op.stage) +
              ", micro-batch " + std::to_string(op.microbatch) +
              (iteration.empty() ? "" : " (" + iteration + ")");
    }
    if (count == 0)
      continue;
    if (ranksShown == kMaxHoverRanks) {
      ++ranksLeft;
      continue;
    }
    ++ranksShown;
    text += "\n- rank " + std::to_string(r) + ": " + std::to_string(count) + " op(s)" + line;
    if (count > kMaxOpsPerRank)
      text += "\n  - ... " + std::to_string(count - kMaxOpsPerRank) + " more";
  }
  if (ranksLeft)
    text += "\n- ... " + std::to_string(ranksLeft) + " more rank(s)";
  if (ranksShown == 0)
    text += "\nno op on any rank at these parameters";
  return text;
}

Value hover(const Document &document, std::string markdown, llvm::SMRange range) {
  return Object{{"contents", Object{{"kind", "markdown"}, {"value", std::move(markdown)}}},
                {"range", rangeOf(document, range)}};
}

} // namespace

Value hoverAt(const Document &document, size_t offset) {
  const Schedule *schedule = document.compilation->ast();
  if (!schedule)
    return nullptr;
  const char *at = document.locAt(offset).getPointer();
  SymbolIndex index(*schedule);
  if (const SymbolIndex::Symbol *symbol = index.symbolAt(at)) {
    llvm::SMRange range = symbol->decl->range;
    for (const auto &[use, id] : index.references)
      if (contains(use, at))
        range = use;
    return hover(document, describeSymbol(document, *symbol), range);
  }
  for (const OpCall *op : index.ops)
    if (contains(op->range, at))
      return hover(document, describeOp(document, *op), op->range);
  return nullptr;
}

Value definitionAt(const Document &document, size_t offset) {
  const Schedule *schedule = document.compilation->ast();
  if (!schedule)
    return nullptr;
  SymbolIndex index(*schedule);
  const SymbolIndex::Symbol *symbol = index.symbolAt(document.locAt(offset).getPointer());
  if (!symbol)
    return nullptr;
  return Object{{"uri", document.uri}, {"range", rangeOf(document, symbol->decl->range)}};
}

} // namespace pipec::lsp
