// Evaluates integer expressions over an environment of variables indexed by the
// ids the name resolver assigned. 64-bit, overflow-checked; `/` and `%` round
// toward negative infinity (as in Python), so `(r - 1) % P` wraps to P - 1.
#pragma once

#include "diag/Diagnostics.h"
#include "syntax/AST.h"

#include <functional>
#include <vector>

namespace pipec {

// Answers pending() for the rank being elaborated (RankInterpreter).
class PendingState {
public:
  virtual ~PendingState() = default;
  // The count for `e` on the whole rank, or on chunk `chunk` when hasChunk.
  virtual bool pending(const ast::Pending &e, bool hasChunk, int64_t chunk, int64_t &out) = 0;
};

class Evaluator {
public:
  // `context` adds notes (which rank, which iteration) to an evaluation error.
  using ContextFn = std::function<void(Diagnostic &)>;

  Evaluator(std::vector<int64_t> &env, DiagnosticEngine &diags) : env_(env), diags_(diags) {}
  void setContext(ContextFn context) { context_ = std::move(context); }
  // Set while a rank program runs; null elsewhere (the name resolver refuses
  // pending() outside rank programs, so null is never asked).
  void setPendingState(PendingState *state) { pending_ = state; }

  // Returns false (after reporting) on division by zero or overflow.
  bool eval(const ast::Expr &expr, int64_t &out);

  // A cost expression, in doubles: numbers may be fractions, `/` divides exactly,
  // conditions are integer expressions. False (after reporting) on a result that
  // is not finite.
  bool evalReal(const ast::Expr &expr, double &out);

  std::vector<int64_t> &env() { return env_; }

  // "P = 8, M = 4": the values of the variables an expression reads.
  std::string describeNames(const ast::Expr &expr) const;

private:
  bool fail(DiagKind kind, const ast::Expr &at, std::string message);
  bool binary(const ast::Binary &e, int64_t &out);

  std::vector<int64_t> &env_;
  DiagnosticEngine &diags_;
  ContextFn context_;
  PendingState *pending_ = nullptr;
};

} // namespace pipec
