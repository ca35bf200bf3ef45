#include "sema/DomainOrder.h"

namespace pipec {

using namespace ast;

void collectParameterUses(const Schedule &schedule, const Expr &e,
                          std::vector<const NameRef *> &uses) {
  switch (e.kind) {
  case ExprKind::Int: case ExprKind::Float: break;
  case ExprKind::Pending:
    if (const ExprPtr &chunk = static_cast<const Pending &>(e).chunk)
      collectParameterUses(schedule, *chunk, uses);
    break;
  case ExprKind::Name: {
    const auto &ref = static_cast<const NameRef &>(e);
    // Parameters are declared first, so their ids are their indices.
    if (ref.varId >= 0 && size_t(ref.varId) < schedule.params.size())
      uses.push_back(&ref);
    break;
  }
  case ExprKind::Unary:
    collectParameterUses(schedule, *static_cast<const Unary &>(e).operand, uses);
    break;
  case ExprKind::Binary:
    collectParameterUses(schedule, *static_cast<const Binary &>(e).lhs, uses);
    collectParameterUses(schedule, *static_cast<const Binary &>(e).rhs, uses);
    break;
  case ExprKind::Conditional: {
    const auto &c = static_cast<const Conditional &>(e);
    collectParameterUses(schedule, *c.cond, uses);
    collectParameterUses(schedule, *c.then, uses);
    collectParameterUses(schedule, *c.otherwise, uses);
    break;
  }
  case ExprKind::Call:
    for (const ExprPtr &arg : static_cast<const Call &>(e).args)
      collectParameterUses(schedule, *arg, uses);
    break;
  }
}

static bool reads(const Schedule &schedule, const DomainAxisRef &axis, int param) {
  std::vector<const NameRef *> uses;
  for (const Expr *bound : axis.bounds)
    collectParameterUses(schedule, *bound, uses);
  for (const NameRef *use : uses)
    if (use->varId == param)
      return true;
  return false;
}

bool checkDomainOrder(const Schedule &schedule, llvm::ArrayRef<DomainAxisRef> axes,
                      DiagnosticEngine &diags) {
  std::vector<int> position(schedule.params.size(), -1);
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i].param >= 0)
      position[axes[i].param] = int(i);
  bool ok = true;
  for (size_t i = 0; i < axes.size(); ++i) {
    std::vector<const NameRef *> uses;
    for (const Expr *bound : axes[i].bounds)
      collectParameterUses(schedule, *bound, uses);
    const std::string &self = schedule.params[axes[i].param].var.name;
    for (const NameRef *use : uses) {
      int at = position[use->varId];
      if (at < 0 || size_t(at) < i)
        continue;
      ok = false;
      if (size_t(at) == i) {
        diags.report(DiagKind::DomainOrder, use->range,
                     "the domain of '" + self + "' uses '" + self + "' itself");
        continue;
      }
      bool cycle = reads(schedule, axes[at], axes[i].param);
      diags.report(DiagKind::DomainOrder, use->range,
                   cycle ? "the domains of '" + self + "' and '" + use->name +
                               "' depend on each other"
                         : "the domain of '" + self + "' uses '" + use->name +
                               "', whose domain comes after it")
          .note(axes[at].at, cycle ? "the domain of '" + use->name + "' is here"
                                   : "declare this domain before the domain of '" + self + "'");
    }
  }
  return ok;
}

std::vector<DomainAxisRef> declaredAxes(const Schedule &schedule) {
  std::vector<DomainAxisRef> axes;
  for (const DomainDecl &domain : schedule.domains) {
    if (domain.paramIndex < 0)
      continue;
    DomainAxisRef axis{domain.paramIndex, domain.nameRange, {}};
    if (domain.isRange())
      axis.bounds = {domain.lo.get(), domain.hi.get()};
    if (domain.step)
      axis.bounds.push_back(domain.step.get());
    for (const ExprPtr &item : domain.items)
      axis.bounds.push_back(item.get());
    axes.push_back(std::move(axis));
  }
  return axes;
}

} // namespace pipec
