// Parameter domains are enumerated in declaration order, each bound evaluated
// with the values already chosen for the domains before it. A bound may
// therefore read a parameter without a domain (its fixed value) or one whose
// domain comes earlier, never its own parameter or a later one.
#pragma once

#include "diag/Diagnostics.h"
#include "syntax/AST.h"

#include "llvm/ADT/ArrayRef.h"

#include <vector>

namespace pipec {

// One domain in enumeration order: the parameter it ranges over and the
// expressions that compute its values (names already resolved).
struct DomainAxisRef {
  int param = -1;   // index into Schedule::params
  ast::SMRange at;  // where the domain is declared (its name)
  std::vector<const ast::Expr *> bounds;
};

// The parameters (indices into Schedule::params) an expression reads, with where.
void collectParameterUses(const ast::Schedule &schedule, const ast::Expr &expr,
                          std::vector<const ast::NameRef *> &uses);

// Reports a bound that reads its own parameter or one whose domain comes later.
// Returns false if it reported.
bool checkDomainOrder(const ast::Schedule &schedule, llvm::ArrayRef<DomainAxisRef> axes,
                      DiagnosticEngine &diags);

// The axes of the domains a schedule declares, in declaration order.
std::vector<DomainAxisRef> declaredAxes(const ast::Schedule &schedule);

} // namespace pipec
