#include "syntax/AstDumper.h"

#include "diag/Diagnostics.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>

namespace pipec {

using namespace ast;

namespace {

const char *binaryName(BinaryOp op) {
  static const char *names[] = {"*", "/", "%", "+", "-", "<", "<=", ">", ">=", "==", "!=", "&&", "||"};
  return names[static_cast<int>(op)];
}

// A string as it would be written in the source: quotes and escapes restored.
std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (char c : text)
    out += c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\t' ? "\\t" : std::string(1, c);
  return out + "\"";
}

// The shortest decimal text that reads back as exactly `value`.
std::string shortest(double value) {
  char buffer[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  return buffer;
}

class Dumper {
public:
  Dumper(const llvm::SourceMgr &sources, llvm::raw_ostream &out) : lines_(sources), out_(out) {}

  void schedule(const Schedule &s) {
    line(0, "Schedule " + s.name, s.range);
    for (const Param &p : s.params)
      line(1, "Param " + p.var.name + " = " + std::to_string(p.defaultValue), p.var.range);
    for (const GlobalItem &item : s.globals) {
      if (item.let) {
        stmt(1, *item.let);
      } else {
        line(1, "Require" + (item.require->message ? " " + quoted(*item.require->message) : ""),
             item.require->range);
        expr(2, *item.require->cond);
      }
    }
    sized(s.ranks, "Ranks");
    sized(s.stages, "Stages");
    sized(s.microbatches, "Microbatches");
    sized(s.copies, "Copies");
    if (s.placement)
      placement(1, *s.placement);
    for (const FlowDecl &flow : s.flows) {
      line(1, "Flow " + flow.name, flow.range);
      expr(2, *flow.lo);
      expr(2, *flow.hi);
      for (const Placement &p : flow.placements)
        placement(2, p);
    }
    for (const CostEntry &cost : s.costs) {
      line(1, "Cost " + cost.name + (cost.valueExpr ? " = expression" : " = " + shortest(cost.value)),
           cost.range);
      if (cost.stage)
        expr(2, *cost.stage);
      if (cost.valueExpr)
        expr(2, *cost.valueExpr);
    }
    if (s.sizes) {
      line(1, s.sizes->value ? "Sizes " + s.sizes->var.name : std::string("Sizes list"),
           s.sizes->range);
      if (s.sizes->value)
        expr(2, *s.sizes->value);
      for (const ExprPtr &item : s.sizes->items)
        expr(2, *item);
    }
    if (s.squeeze) {
      line(1, s.squeeze->limit ? "Squeeze limit" : "Squeeze", s.squeeze->range);
      if (s.squeeze->limit)
        expr(2, *s.squeeze->limit);
    }
    for (const DomainDecl &domain : s.domains) {
      line(1, "Domain " + domain.name + (domain.isRange() ? " range" : " list"), domain.range);
      if (domain.isRange()) {
        expr(2, *domain.lo);
        expr(2, *domain.hi);
        if (domain.step) {
          out_.indent(4) << "step:\n";
          expr(3, *domain.step);
        }
      }
      for (const ExprPtr &item : domain.items)
        expr(2, *item);
    }
    for (const RankProgram &program : s.rankPrograms) {
      if (program.generic) {
        line(1, "RankProgram generic " + program.var.name, program.range);
      } else {
        line(1, "RankProgram explicit", program.range);
        expr(2, *program.index);
      }
      if (program.greedy) {
        line(2, program.limit ? "Greedy limit" : "Greedy", program.greedyRange);
        if (program.limit)
          expr(3, *program.limit);
      }
      block(2, program.body);
    }
  }

private:
  void line(int depth, const std::string &text, SMRange at) {
    SourcePosition pos = lines_.locate(at.Start);
    out_.indent(depth * 2) << text << " <" << pos.line << ':' << pos.column << ">\n";
  }

  void sized(const std::optional<Sized> &decl, const char *what) {
    if (!decl)
      return;
    line(1, what, decl->range);
    expr(2, *decl->value);
  }

  void placement(int depth, const Placement &p) {
    line(depth, "Place stage " + p.stageVar.name, p.range);
    expr(depth + 1, *p.rank);
    if (p.chunk)
      expr(depth + 1, *p.chunk);
  }

  void block(int depth, const Block &stmts) {
    for (const StmtPtr &s : stmts)
      stmt(depth, *s);
  }

  void stmt(int depth, const Stmt &s) {
    switch (s.kind) {
    case StmtKind::Let: {
      const auto &let = static_cast<const LetStmt &>(s);
      line(depth, "Let " + let.var.name, s.range);
      expr(depth + 1, *let.value);
      break;
    }
    case StmtKind::For: {
      const auto &loop = static_cast<const ForStmt &>(s);
      line(depth, "For " + loop.var.name, s.range);
      expr(depth + 1, *loop.lo);
      expr(depth + 1, *loop.hi);
      block(depth + 1, loop.body);
      break;
    }
    case StmtKind::If: {
      const auto &branch = static_cast<const IfStmt &>(s);
      line(depth, "If", s.range);
      expr(depth + 1, *branch.cond);
      block(depth + 1, branch.then);
      if (!branch.otherwise.empty()) {
        out_.indent((depth + 1) * 2) << "Else\n";
        block(depth + 2, branch.otherwise);
      }
      break;
    }
    case StmtKind::Op: {
      const auto &ops = static_cast<const OpStmt &>(s).ops;
      int opDepth = depth;
      if (ops.size() == 2) {
        line(depth, "OverlapPair", s.range);
        opDepth = depth + 1;
      }
      for (const OpCall &op : ops) {
        line(opDepth, std::string("Op ") + opKindName(op.kind), op.range);
        if (op.chunk) {
          out_.indent((opDepth + 1) * 2) << "chunk:\n";
          expr(opDepth + 2, *op.chunk);
        }
        if (op.mb) {
          out_.indent((opDepth + 1) * 2) << "mb:\n";
          expr(opDepth + 2, *op.mb);
        }
        if (op.peer) {
          out_.indent((opDepth + 1) * 2) << "peer:\n";
          expr(opDepth + 2, *op.peer);
        }
      }
      break;
    }
    case StmtKind::Block: {
      const auto &expanded = static_cast<const BlockStmt &>(s);
      line(depth, "Expansion " + expanded.def, s.range);
      block(depth + 1, expanded.body);
      break;
    }
    }
  }

  void expr(int depth, const Expr &e) {
    switch (e.kind) {
    case ExprKind::Int:
      line(depth, "Int " + std::to_string(static_cast<const IntLit &>(e).value), e.range);
      break;
    case ExprKind::Name:
      line(depth, "Name " + static_cast<const NameRef &>(e).name, e.range);
      break;
    case ExprKind::Unary: {
      const auto &u = static_cast<const Unary &>(e);
      line(depth, u.op == UnaryOp::Neg ? "Unary -" : "Unary !", e.range);
      expr(depth + 1, *u.operand);
      break;
    }
    case ExprKind::Binary: {
      const auto &b = static_cast<const Binary &>(e);
      line(depth, std::string("Binary ") + binaryName(b.op), e.range);
      expr(depth + 1, *b.lhs);
      expr(depth + 1, *b.rhs);
      break;
    }
    case ExprKind::Conditional: {
      const auto &c = static_cast<const Conditional &>(e);
      line(depth, "Conditional", e.range);
      expr(depth + 1, *c.cond);
      expr(depth + 1, *c.then);
      expr(depth + 1, *c.otherwise);
      break;
    }
    case ExprKind::Call: {
      const auto &c = static_cast<const Call &>(e);
      line(depth, c.fn == Builtin::Min ? "Call min" : "Call max", e.range);
      for (const ExprPtr &arg : c.args)
        expr(depth + 1, *arg);
      break;
    }
    case ExprKind::Float:
      line(depth, "Number " + shortest(static_cast<const FloatLit &>(e).value), e.range);
      break;
    case ExprKind::Pending: {
      const auto &p = static_cast<const Pending &>(e);
      line(depth, std::string("Pending ") + opKindName(p.op), e.range);
      if (p.chunk)
        expr(depth + 1, *p.chunk);
      break;
    }
    }
  }

  SourceLines lines_;
  llvm::raw_ostream &out_;
};

} // namespace

void dumpAST(const Schedule &schedule, const llvm::SourceMgr &sources, llvm::raw_ostream &out) {
  Dumper(sources, out).schedule(schedule);
}

} // namespace pipec
