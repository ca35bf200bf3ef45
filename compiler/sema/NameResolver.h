// Name resolution: binds every name in the AST to its declaration, once, before
// any evaluation — so an undefined name is reported even in code that a given
// set of parameters never runs, and elaboration indexes variables by dense id.
//
// Scopes: parameters, then top-level lets in source order (a let sees only the
// lets above it); all top-level names are visible to topology, flows, costs,
// placements and rank programs. Every `{ }` block opens a scope.
#pragma once

#include "diag/Diagnostics.h"
#include "syntax/AST.h"

namespace pipec {

// Returns false if an error was reported. Warnings: shadowing, unused names.
bool resolveNames(ast::Schedule &schedule, DiagnosticEngine &diags);

// Resolves an expression written outside the file (a -D range bound) against the
// schedule's parameters, after resolveNames. Returns false if an error was reported.
bool resolveParameterExpr(ast::Schedule &schedule, ast::Expr &expr, DiagnosticEngine &diags);

} // namespace pipec
