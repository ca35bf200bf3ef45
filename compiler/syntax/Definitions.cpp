#include "syntax/Definitions.h"

#include "llvm/ADT/StringSet.h"

namespace pipec {

using namespace ast;

namespace {

// Copies a body, putting a copy of argument i where parameter i is read and
// renaming the body's own variables. Counts the nodes it makes and the depth it
// reaches, and stops (leaving `overflow` set) past either limit.
class Cloner {
public:
  Cloner(const Definition *def, const std::vector<ExprPtr> *args, uint64_t &nodes)
      : def_(def), args_(args), nodes_(nodes) {}

  bool overflow = false;

  ExprPtr expr(const Expr &e) {
    if (!enter())
      return std::make_unique<IntLit>(e.range, 0);
    ExprPtr out = exprInner(e);
    --depth_;
    return out;
  }

  Block block(const Block &stmts) {
    Block out;
    for (const StmtPtr &s : stmts)
      out.push_back(stmt(*s));
    return out;
  }

  StmtPtr stmt(const Stmt &s) {
    if (!enter())
      return std::make_unique<BlockStmt>(s.range);
    StmtPtr out = stmtInner(s);
    --depth_;
    return out;
  }

private:
  bool enter() {
    if (overflow)
      return false;
    if (++nodes_ > DefinitionTable::kMaxExpandedNodes ||
        depth_ + 1 > DefinitionTable::kMaxExpandedDepth) {
      overflow = true;
      return false;
    }
    ++depth_;
    return true;
  }

  std::string renamed(const std::string &name) const {
    return def_ ? def_->name + "." + name : name;
  }

  VarDecl var(const VarDecl &v) const {
    VarDecl out = v;
    out.name = renamed(v.name);
    out.id = -1;
    return out;
  }

  ExprPtr exprInner(const Expr &e) {
    switch (e.kind) {
    case ExprKind::Int: return std::make_unique<IntLit>(e.range, static_cast<const IntLit &>(e).value);
    case ExprKind::Float:
      return std::make_unique<FloatLit>(e.range, static_cast<const FloatLit &>(e).value);
    case ExprKind::Name: {
      const auto &ref = static_cast<const NameRef &>(e);
      if (def_) {
        for (size_t i = 0; i < def_->params.size(); ++i)
          if (def_->params[i] == ref.name) {
            Cloner plain(nullptr, nullptr, nodes_); // the caller's names, as written
            plain.depth_ = depth_;
            ExprPtr arg = plain.expr(*(*args_)[i]);
            overflow |= plain.overflow;
            return arg;
          }
        return std::make_unique<NameRef>(e.range, renamed(ref.name));
      }
      return std::make_unique<NameRef>(e.range, ref.name);
    }
    case ExprKind::Unary: {
      const auto &u = static_cast<const Unary &>(e);
      return std::make_unique<Unary>(e.range, u.op, expr(*u.operand));
    }
    case ExprKind::Binary: {
      const auto &b = static_cast<const Binary &>(e);
      return std::make_unique<Binary>(e.range, b.op, expr(*b.lhs), expr(*b.rhs));
    }
    case ExprKind::Conditional: {
      const auto &c = static_cast<const Conditional &>(e);
      return std::make_unique<Conditional>(e.range, expr(*c.cond), expr(*c.then),
                                           expr(*c.otherwise));
    }
    case ExprKind::Call: {
      const auto &c = static_cast<const Call &>(e);
      std::vector<ExprPtr> args;
      for (const ExprPtr &a : c.args)
        args.push_back(expr(*a));
      return std::make_unique<Call>(e.range, c.fn, std::move(args));
    }
    case ExprKind::Pending: {
      const auto &p = static_cast<const Pending &>(e);
      return std::make_unique<Pending>(e.range, p.op, p.chunk ? expr(*p.chunk) : nullptr);
    }
    }
    return std::make_unique<IntLit>(e.range, 0);
  }

  StmtPtr stmtInner(const Stmt &s) {
    switch (s.kind) {
    case StmtKind::Let: {
      const auto &let = static_cast<const LetStmt &>(s);
      auto out = std::make_unique<LetStmt>(s.range);
      out->value = expr(*let.value);
      out->var = var(let.var);
      return out;
    }
    case StmtKind::For: {
      const auto &loop = static_cast<const ForStmt &>(s);
      auto out = std::make_unique<ForStmt>(s.range);
      out->var = var(loop.var);
      out->lo = expr(*loop.lo);
      out->hi = expr(*loop.hi);
      out->body = block(loop.body);
      return out;
    }
    case StmtKind::If: {
      const auto &branch = static_cast<const IfStmt &>(s);
      auto out = std::make_unique<IfStmt>(s.range);
      out->cond = expr(*branch.cond);
      out->then = block(branch.then);
      out->otherwise = block(branch.otherwise);
      return out;
    }
    case StmtKind::Op: {
      const auto &op = static_cast<const OpStmt &>(s);
      auto out = std::make_unique<OpStmt>(s.range);
      for (const OpCall &call : op.ops) {
        OpCall copy;
        copy.kind = call.kind;
        copy.range = call.range;
        if (call.chunk)
          copy.chunk = expr(*call.chunk);
        if (call.mb)
          copy.mb = expr(*call.mb);
        if (call.peer)
          copy.peer = expr(*call.peer);
        out->ops.push_back(std::move(copy));
      }
      return out;
    }
    case StmtKind::Block: {
      const auto &inner = static_cast<const BlockStmt &>(s);
      auto out = std::make_unique<BlockStmt>(s.range);
      out->def = inner.def;
      out->body = block(inner.body);
      return out;
    }
    }
    return std::make_unique<BlockStmt>(s.range);
  }

  const Definition *def_;             // null: copy names as they are
  const std::vector<ExprPtr> *args_;
  uint64_t &nodes_;
  int depth_ = 0;
};

// The names a body declares (lets, loop variables) and the names it reads.
struct BodyNames {
  std::vector<const VarDecl *> declared;
  std::vector<const NameRef *> read;

  void expr(const Expr &e) {
    switch (e.kind) {
    case ExprKind::Int: case ExprKind::Float: break;
    case ExprKind::Name: read.push_back(&static_cast<const NameRef &>(e)); break;
    case ExprKind::Unary: expr(*static_cast<const Unary &>(e).operand); break;
    case ExprKind::Binary:
      expr(*static_cast<const Binary &>(e).lhs);
      expr(*static_cast<const Binary &>(e).rhs);
      break;
    case ExprKind::Conditional: {
      const auto &c = static_cast<const Conditional &>(e);
      expr(*c.cond);
      expr(*c.then);
      expr(*c.otherwise);
      break;
    }
    case ExprKind::Call:
      for (const ExprPtr &a : static_cast<const Call &>(e).args)
        expr(*a);
      break;
    case ExprKind::Pending:
      if (const ExprPtr &c = static_cast<const Pending &>(e).chunk)
        expr(*c);
      break;
    }
  }

  void block(const Block &stmts) {
    for (const StmtPtr &s : stmts)
      stmt(*s);
  }

  void stmt(const Stmt &s) {
    switch (s.kind) {
    case StmtKind::Let:
      declared.push_back(&static_cast<const LetStmt &>(s).var);
      expr(*static_cast<const LetStmt &>(s).value);
      break;
    case StmtKind::For: {
      const auto &loop = static_cast<const ForStmt &>(s);
      declared.push_back(&loop.var);
      expr(*loop.lo);
      expr(*loop.hi);
      block(loop.body);
      break;
    }
    case StmtKind::If: {
      const auto &branch = static_cast<const IfStmt &>(s);
      expr(*branch.cond);
      block(branch.then);
      block(branch.otherwise);
      break;
    }
    case StmtKind::Op:
      for (const OpCall &call : static_cast<const OpStmt &>(s).ops) {
        if (call.chunk)
          expr(*call.chunk);
        if (call.mb)
          expr(*call.mb);
        if (call.peer)
          expr(*call.peer);
      }
      break;
    case StmtKind::Block: block(static_cast<const BlockStmt &>(s).body); break;
    }
  }
};

} // namespace

bool DefinitionTable::add(std::unique_ptr<Definition> def, DiagnosticEngine &diags) {
  if (const Definition *earlier = find(def->name)) {
    diags.report(DiagKind::DuplicateDefinition, def->nameRange,
                 "'" + def->name + "' is defined twice")
        .note(earlier->nameRange, "first defined here (imports share one namespace)");
    return false;
  }
  if (def->name == "min" || def->name == "max" || def->name == "pending") {
    diags.report(DiagKind::DuplicateDefinition, def->nameRange,
                 "'" + def->name + "' is a built-in function and cannot be redefined");
    return false;
  }
  BodyNames names;
  if (def->isExpr())
    names.expr(*def->expr);
  else
    names.block(def->ops);
  llvm::StringSet<> own;
  for (const std::string &param : def->params)
    own.insert(param);
  bool ok = true;
  for (const VarDecl *declared : names.declared) {
    if (own.count(declared->name)) {
      diags.report(DiagKind::DefinitionFreeName, declared->range,
                   "'" + declared->name + "' hides a parameter of '" + def->name + "'")
          .note(def->nameRange, "'" + def->name + "' is defined here; rename the variable");
      ok = false;
    }
  }
  llvm::StringSet<> locals;
  for (const VarDecl *declared : names.declared)
    locals.insert(declared->name);
  for (const NameRef *ref : names.read) {
    if (own.count(ref->name) || locals.count(ref->name))
      continue;
    std::string params;
    for (const std::string &p : def->params)
      params += (params.empty() ? "" : ", ") + p;
    diags.report(DiagKind::DefinitionFreeName, ref->range,
                 "'" + def->name + "' reads '" + ref->name +
                     "', which is neither one of its parameters nor declared in it")
        .note(def->nameRange, "a definition sees only its parameters (" +
                                  (params.empty() ? std::string("none") : params) +
                                  "); pass '" + ref->name + "' as an argument");
    ok = false;
  }
  // Kept even when refused, so that its calls are not also "unknown function".
  def->broken = !ok;
  byName_[def->name] = defs_.size();
  defs_.push_back(std::move(def));
  return ok;
}

bool DefinitionTable::checkArity(const Definition &def, size_t given, SMRange call,
                                 DiagnosticEngine &diags) const {
  if (given == def.params.size())
    return true;
  diags.report(DiagKind::DefinitionArity, call,
               "'" + def.name + "' takes " + std::to_string(def.params.size()) + " argument" +
                   (def.params.size() == 1 ? "" : "s") + ", got " + std::to_string(given))
      .note(def.nameRange, "defined here");
  return false;
}

void DefinitionTable::reportOverflow(const Definition &def, SMRange call, DiagnosticEngine &diags) {
  if (overflowReported_)
    return; // every later expansion fails too: the first one says why
  overflowReported_ = true;
  diags.report(DiagKind::ExpansionTooLarge, call,
               "expanding '" + def.name + "' here exceeds " +
                   std::to_string(DefinitionTable::kMaxExpandedNodes) + " nodes or " +
                   std::to_string(DefinitionTable::kMaxExpandedDepth) + " levels of nesting")
      .note(def.nameRange, "each call copies the body of this definition; calls inside it "
                           "multiply the copies");
}

ExprPtr DefinitionTable::expandExpr(const Definition &def, std::vector<ExprPtr> args,
                                    SMRange call, DiagnosticEngine &diags) {
  if (def.broken)
    return nullptr;
  if (!def.isExpr()) {
    diags.report(DiagKind::DefinitionKindMismatch, call,
                 "'" + def.name + "' is a sequence of ops and cannot be used as a value")
        .note(def.nameRange, "defined here with a block; call it as a statement");
    return nullptr;
  }
  if (!checkArity(def, args.size(), call, diags))
    return nullptr;
  Cloner cloner(&def, &args, expandedNodes_);
  ExprPtr out = cloner.expr(*def.expr);
  if (cloner.overflow) {
    reportOverflow(def, call, diags);
    return nullptr;
  }
  return out;
}

StmtPtr DefinitionTable::expandOps(const Definition &def, std::vector<ExprPtr> args,
                                   SMRange call, DiagnosticEngine &diags) {
  if (def.broken)
    return nullptr;
  if (def.isExpr()) {
    diags.report(DiagKind::DefinitionKindMismatch, call,
                 "'" + def.name + "' is an expression and cannot be used as a statement")
        .note(def.nameRange, "defined here with '='; use it inside an expression");
    return nullptr;
  }
  if (!checkArity(def, args.size(), call, diags))
    return nullptr;
  Cloner cloner(&def, &args, expandedNodes_);
  auto out = std::make_unique<BlockStmt>(call);
  out->def = def.name;
  out->body = cloner.block(def.ops);
  if (cloner.overflow) {
    reportOverflow(def, call, diags);
    return nullptr;
  }
  return out;
}

} // namespace pipec
