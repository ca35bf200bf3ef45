// Helpers for unit tests: run the front end on a source string, through the
// driver's own pipeline (Compilation::fromText).
#pragma once

#include "check/Checks.h"
#include "diag/Diagnostics.h"
#include "frontend/Compilation.h"
#include "elab/Elaborator.h"
#include "plan/Cluster.h"
#include "plan/ModelConfig.h"
#include "plan/Planner.h"
#include "syntax/AST.h"

#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <string>

namespace pipec::test {

// A compilation of "test.pipe" up to elaboration, with its parts in reach.
struct Compiled {
  explicit Compiled(std::unique_ptr<Compilation> compilation);

  std::unique_ptr<Compilation> compilation;
  llvm::SourceMgr &sources;
  DiagnosticEngine &diags;
  const ast::Schedule *ast = nullptr; // null when parsing failed
  const ScheduleIR *ir = nullptr;     // null when any phase failed

  bool has(DiagKind kind) const;
  std::string renderedDiagnostics() const;
  std::string ir_text() const; // `emit --target ir` output
};

std::unique_ptr<Compiled> compile(const std::string &source, const ElabOptions &options = {});

// The text of examples/NAME.pipe, the schedule library.
std::string readExample(const std::string &name);

// examples/NAME.pipe at P and M, elaborated and checked (both REQUIREd).
struct CheckedExample {
  std::unique_ptr<Compiled> compiled;
  CheckReport report;
  const ScheduleIR &ir() const { return *compiled->ir; }
};
CheckedExample checkExample(const std::string &name, int P, int M);

// A Hugging Face config from its JSON text (REQUIREd to parse).
plan::ModelConfig parseModelText(const std::string &json);

// A cluster of round figures for hand-computed costs: nodes of 8, matmuls at
// 5e11 FLOP/s (no shape losses: no SM count), NVLink 100 GB/s, NICs 10 GB/s,
// collectives at the full link rate, latencies 1 us and 10 us.
plan::Cluster roundCluster(int64_t gpus);

// The planner's inputs for tests/unit/Inputs/hf/FILE on `gpus` H100s (global
// batch and sequence length left to the test).
plan::PlanInputs h100Inputs(const std::string &hfFile, int64_t gpus);

// Wraps a rank-program body in a 1F1B-shaped schedule header (P ranks, M micro-batches).
std::string withBody(const std::string &body, int P = 2, int M = 4);

} // namespace pipec::test
