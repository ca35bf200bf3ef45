#include "sema/NameResolver.h"

#include "sema/DomainOrder.h"

#include "llvm/ADT/StringMap.h"

namespace pipec {

using namespace ast;

namespace {

class Resolver {
public:
  Resolver(DiagnosticEngine &diags) : diags_(diags) {}

  void run(Schedule &schedule) {
    pushScope();
    for (Param &p : schedule.params)
      declare(p.var);
    domains(schedule); // before the lets: a domain sees only parameters
    for (GlobalItem &item : schedule.globals) {
      if (item.let) {
        expr(*item.let->value);
        declare(item.let->var);
      } else {
        expr(*item.require->cond);
      }
    }
    for (auto *sized : {&schedule.ranks, &schedule.stages, &schedule.microbatches, &schedule.copies})
      if (*sized)
        expr(*(*sized)->value);
    for (CostEntry &cost : schedule.costs) {
      if (cost.stage)
        expr(*cost.stage);
      if (cost.valueExpr)
        expr(*cost.valueExpr);
    }
    if (schedule.sizes) {
      for (ExprPtr &item : schedule.sizes->items)
        expr(*item);
      if (schedule.sizes->value) {
        pushScope();
        declare(schedule.sizes->var);
        expr(*schedule.sizes->value);
        popScope();
      }
    }
    if (schedule.squeeze && schedule.squeeze->limit)
      expr(*schedule.squeeze->limit);
    if (schedule.placement)
      placement(*schedule.placement);
    for (FlowDecl &flow : schedule.flows) {
      expr(*flow.lo);
      expr(*flow.hi);
      for (Placement &p : flow.placements)
        placement(p);
    }
    for (RankProgram &program : schedule.rankPrograms) {
      inRank_ = true;
      pushScope();
      if (program.generic) {
        if (int existing = lookup(program.var.name); existing >= 0) {
          diags_.report(DiagKind::RankVariableHidesName, program.var.range,
                        "'rank " + program.var.name + "' declares a new rank variable that hides '" +
                            program.var.name + "'")
              .note(decls_[existing].decl->range, "'" + program.var.name + "' is declared here")
              .note("for the program of the rank numbered " + program.var.name + ", write 'rank (" +
                    program.var.name + ") { ... }'");
          decls_[existing].used = true;
          declare(program.var, /*warnIfHiding=*/false);
        } else {
          declare(program.var);
        }
      }
      else
        expr(*program.index);
      if (program.limit)
        expr(*program.limit);
      block(program.body);
      popScope();
      inRank_ = false;
    }
    popScope();
    schedule.numVars = static_cast<int>(decls_.size());
    reportUnused();
  }

  // Resolves an expression that may read only the schedule's parameters.
  void parameterExpr(Schedule &schedule, Expr &e) {
    pushScope();
    for (Param &p : schedule.params) {
      visible_[p.var.name].push_back(p.var.id);
      decls_.resize(std::max<size_t>(decls_.size(), p.var.id + 1));
      decls_[p.var.id] = {&p.var, 1};
    }
    expr(e);
  }

private:
  void domains(Schedule &schedule) {
    std::vector<llvm::StringRef> names;
    for (const Param &p : schedule.params)
      names.push_back(p.var.name);
    std::vector<const DomainDecl *> byParam(schedule.params.size(), nullptr);
    for (DomainDecl &domain : schedule.domains) {
      if (domain.isRange()) {
        expr(*domain.lo);
        expr(*domain.hi);
        if (domain.step)
          expr(*domain.step);
      }
      for (ExprPtr &item : domain.items)
        expr(*item);
      for (size_t i = 0; i < schedule.params.size(); ++i)
        if (schedule.params[i].var.name == domain.name)
          domain.paramIndex = int(i);
      if (domain.paramIndex < 0) {
        std::string suggestion = closestMatch(domain.name, names);
        auto &d = diags_.report(DiagKind::UnknownDomainParameter, domain.nameRange,
                                "'" + domain.name + "' is not a parameter of schedule '" +
                                    schedule.name + "'" +
                                    (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?"));
        d.note(schedule.nameRange, "a domain gives the values of a parameter declared here");
        if (!suggestion.empty())
          d.fixit(domain.nameRange, suggestion);
        continue;
      }
      if (const DomainDecl *earlier = byParam[domain.paramIndex]) {
        diags_.report(DiagKind::DuplicateDomain, domain.nameRange,
                      "the domain of '" + domain.name + "' is declared twice")
            .note(earlier->range, "first declared here");
        domain.paramIndex = -1;
        continue;
      }
      byParam[domain.paramIndex] = &domain;
    }
    checkDomainOrder(schedule, declaredAxes(schedule), diags_);
  }

  struct Entry {
    VarDecl *decl;
    size_t scope; // depth of the scope that declares it
    bool used = false;
  };

  // Each name maps to the stack of its visible declarations, innermost last, so a
  // lookup costs the same however deep the scopes are (a long else-if chain nests
  // one scope per branch).
  void pushScope() { scopes_.emplace_back(); }
  void popScope() {
    for (int id : scopes_.back()) {
      auto it = visible_.find(decls_[id].decl->name);
      it->second.pop_back();
      if (it->second.empty())
        visible_.erase(it);
    }
    scopes_.pop_back();
  }

  void declare(VarDecl &var, bool warnIfHiding = true) {
    var.id = static_cast<int>(decls_.size());
    decls_.push_back({&var, scopes_.size()});
    int existing = lookup(var.name);
    if (existing >= 0 && decls_[existing].scope == scopes_.size()) {
      diags_.report(DiagKind::Redefinition, var.range, "redefinition of '" + var.name + "'")
          .note(decls_[existing].decl->range, "previously declared here");
      decls_[existing].used = true; // reported once; don't also call it unused
    } else if (existing >= 0 && warnIfHiding) {
      diags_.warn(DiagKind::ShadowedName, var.range, var.name)
          .note(decls_[existing].decl->range, "outer declaration is here");
      decls_[existing].used = true; // hiding is reported once; don't also call it unused
    }
    visible_[var.name].push_back(var.id);
    scopes_.back().push_back(var.id);
  }

  int lookup(llvm::StringRef name) const {
    auto it = visible_.find(name);
    return it == visible_.end() ? -1 : it->second.back();
  }

  void placement(Placement &p) {
    pushScope();
    declare(p.stageVar);
    expr(*p.rank);
    if (p.chunk)
      expr(*p.chunk);
    popScope();
  }

  void block(Block &stmts) {
    pushScope();
    for (StmtPtr &s : stmts)
      stmt(*s);
    popScope();
  }

  void stmt(Stmt &s) {
    switch (s.kind) {
    case StmtKind::Let: {
      auto &let = static_cast<LetStmt &>(s);
      expr(*let.value);
      declare(let.var);
      break;
    }
    case StmtKind::For: {
      auto &loop = static_cast<ForStmt &>(s);
      expr(*loop.lo);
      expr(*loop.hi);
      pushScope();
      declare(loop.var);
      block(loop.body);
      popScope();
      break;
    }
    case StmtKind::If: {
      auto &branch = static_cast<IfStmt &>(s);
      expr(*branch.cond);
      block(branch.then);
      block(branch.otherwise);
      break;
    }
    case StmtKind::Block:
      block(static_cast<BlockStmt &>(s).body);
      break;
    case StmtKind::Op:
      for (OpCall &op : static_cast<OpStmt &>(s).ops) {
        if (op.chunk)
          expr(*op.chunk);
        if (op.mb)
          expr(*op.mb);
        if (op.peer)
          expr(*op.peer);
      }
      break;
    }
  }

  void expr(Expr &e) {
    switch (e.kind) {
    case ExprKind::Int: case ExprKind::Float: break;
    case ExprKind::Pending: {
      auto &p = static_cast<Pending &>(e);
      if (!inRank_)
        diags_.report(DiagKind::PendingOutsideRank, e.range,
                      "pending() reads a rank's state, so it is meaningful only inside a rank "
                      "program");
      if (p.chunk)
        expr(*p.chunk);
      break;
    }
    case ExprKind::Name: name(static_cast<NameRef &>(e)); break;
    case ExprKind::Unary: expr(*static_cast<Unary &>(e).operand); break;
    case ExprKind::Binary:
      expr(*static_cast<Binary &>(e).lhs);
      expr(*static_cast<Binary &>(e).rhs);
      break;
    case ExprKind::Conditional: {
      auto &c = static_cast<Conditional &>(e);
      expr(*c.cond);
      expr(*c.then);
      expr(*c.otherwise);
      break;
    }
    case ExprKind::Call:
      for (ExprPtr &arg : static_cast<Call &>(e).args)
        expr(*arg);
      break;
    }
  }

  void name(NameRef &ref) {
    int id = lookup(ref.name);
    if (id >= 0) {
      ref.varId = id;
      decls_[id].used = true;
      return;
    }
    std::vector<llvm::StringRef> visible;
    for (const auto &entry : visible_)
      visible.push_back(entry.getKey());
    std::string suggestion = closestMatch(ref.name, visible);
    auto &d = diags_.report(DiagKind::UndefinedName, ref.range,
                            "use of undeclared name '" + ref.name + "'" +
                                (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?"));
    if (!suggestion.empty())
      d.fixit(ref.range, suggestion);
  }

  void reportUnused() {
    for (const Entry &entry : decls_) {
      if (entry.used)
        continue;
      const VarDecl &var = *entry.decl;
      if (var.role == VarRole::Parameter)
        diags_.warn(DiagKind::UnusedParameter, var.range, var.name);
      else if (var.role == VarRole::Let)
        diags_.warn(DiagKind::UnusedLet, var.range, var.name);
    }
  }

  DiagnosticEngine &diags_;
  bool inRank_ = false; // resolving a rank program: pending() may be read
  std::vector<std::vector<int>> scopes_;            // ids declared in each open scope
  llvm::StringMap<std::vector<int>> visible_;       // name -> visible declarations' ids
  std::vector<Entry> decls_;
};

} // namespace

bool resolveParameterExpr(Schedule &schedule, Expr &expr, DiagnosticEngine &diags) {
  unsigned before = diags.errorCount();
  Resolver(diags).parameterExpr(schedule, expr);
  return diags.errorCount() == before;
}

bool resolveNames(Schedule &schedule, DiagnosticEngine &diags) {
  unsigned before = diags.errorCount();
  Resolver(diags).run(schedule);
  return diags.errorCount() == before;
}

} // namespace pipec
