// Checks a schedule at every point of its parameter domain, on a pool of
// threads. Each point is elaborated and checked with diagnostics of its own
// (the AST and the source buffers are shared, read only). What is reported does
// not depend on thread timing: the diagnostics of the smallest failing point,
// and each distinct warning at the smallest point that gives it.
#pragma once

#include "frontend/Compilation.h"

#include "diag/LintRenderers.h"
#include "elab/Domain.h"

namespace pipec {

struct DomainCheckOptions {
  unsigned jobs = 0;     // threads; 0: one per hardware thread
  bool failFast = false; // stop at the first failure found
  unsigned errorLimit = DiagnosticEngine::kDefaultErrorLimit;
};

enum class PointStatus { Ok, Unsupported, Failed };

// Elaborates and checks one point into `diags`; `ops` is how many it elaborated.
// A point is unsupported when every error it has is a failed `require`.
PointStatus checkPoint(const ast::Schedule &schedule, const ElabOptions &elab,
                       const CheckOptions &checks, DiagnosticEngine &diags, uint64_t &ops);

// Checks every point of `domain` and moves what is to be reported into
// compilation.diags(), each diagnostic with a note naming its point. When every
// point is unsupported, the first one's failed requires are reported as errors.
// --max-ops bounds the ops of all points together, so that no domain runs for
// hours: past it the check stops with that error alone (summary.overBudget).
PointSummary checkDomain(Compilation &compilation, const ParameterDomain &domain,
                         const ElabOptions &elab, const CheckOptions &checks,
                         const DomainCheckOptions &options);

} // namespace pipec
