// Helpers for unit tests: run the front end on a source string.
#pragma once

#include "diag/Diagnostics.h"
#include "elab/Elaborator.h"
#include "syntax/AST.h"

#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <optional>
#include <string>

namespace pipec::test {

struct Compiled {
  llvm::SourceMgr sources;
  DiagnosticEngine diags{sources};
  std::unique_ptr<ast::Schedule> ast;
  std::optional<ScheduleIR> ir;

  bool has(DiagKind kind) const;
  std::string renderedDiagnostics() const;
  std::string ir_text() const; // `emit --target ir` output
};

std::unique_ptr<Compiled> compile(const std::string &source, const ElabOptions &options = {});

// Wraps a rank-program body in a 1F1B-shaped schedule header (P ranks, M micro-batches).
std::string withBody(const std::string &body, int P = 2, int M = 4);

} // namespace pipec::test
