#include "elab/Evaluator.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pipec {

using namespace ast;

bool Evaluator::fail(DiagKind kind, const Expr &at, std::string message) {
  if (Diagnostic *d = diags_.reportOnce(kind, at.range, std::move(message))) {
    std::string values = describeNames(at);
    if (!values.empty())
      d->note("with " + values);
    if (context_)
      context_(*d);
  }
  return false;
}

bool Evaluator::eval(const Expr &expr, int64_t &out) {
  switch (expr.kind) {
  case ExprKind::Int:
    out = static_cast<const IntLit &>(expr).value;
    return true;
  case ExprKind::Name:
    out = env_[static_cast<const NameRef &>(expr).varId];
    return true;
  case ExprKind::Unary: {
    const auto &u = static_cast<const Unary &>(expr);
    int64_t v;
    if (!eval(*u.operand, v))
      return false;
    if (u.op == UnaryOp::Not) {
      out = v == 0;
      return true;
    }
    if (__builtin_sub_overflow(int64_t(0), v, &out))
      return fail(DiagKind::IntegerOverflow, expr, "negating " + std::to_string(v) + " overflows");
    return true;
  }
  case ExprKind::Binary:
    return binary(static_cast<const Binary &>(expr), out);
  case ExprKind::Conditional: {
    const auto &c = static_cast<const Conditional &>(expr);
    int64_t cond;
    if (!eval(*c.cond, cond))
      return false;
    return eval(cond != 0 ? *c.then : *c.otherwise, out);
  }
  case ExprKind::Call: {
    const auto &call = static_cast<const Call &>(expr);
    for (size_t i = 0; i < call.args.size(); ++i) {
      int64_t v;
      if (!eval(*call.args[i], v))
        return false;
      out = i == 0 ? v : call.fn == Builtin::Min ? std::min(out, v) : std::max(out, v);
    }
    return true;
  }
  case ExprKind::Pending: {
    const auto &p = static_cast<const Pending &>(expr);
    int64_t chunk = 0;
    if (p.chunk && !eval(*p.chunk, chunk))
      return false;
    if (!pending_)
      return fail(DiagKind::PendingOutsideRank, expr, "pending() has no rank state to read here");
    return pending_->pending(p, p.chunk != nullptr, chunk, out);
  }
  case ExprKind::Float: // only cost expressions hold fractions (the grammar sees to it)
    return fail(DiagKind::SyntaxError, expr, "a fraction where an integer is needed");
  }
  return false;
}

bool Evaluator::evalReal(const Expr &expr, double &out) {
  switch (expr.kind) {
  case ExprKind::Float: out = static_cast<const FloatLit &>(expr).value; return true;
  case ExprKind::Int: out = double(static_cast<const IntLit &>(expr).value); return true;
  case ExprKind::Name: out = double(env_[static_cast<const NameRef &>(expr).varId]); return true;
  case ExprKind::Unary:
    if (!evalReal(*static_cast<const Unary &>(expr).operand, out))
      return false;
    out = -out;
    return true;
  case ExprKind::Binary: {
    const auto &b = static_cast<const Binary &>(expr);
    double x, y;
    if (!evalReal(*b.lhs, x) || !evalReal(*b.rhs, y))
      return false;
    switch (b.op) {
    case BinaryOp::Add: out = x + y; break;
    case BinaryOp::Sub: out = x - y; break;
    case BinaryOp::Mul: out = x * y; break;
    default: out = x / y; break;
    }
    if (!std::isfinite(out))
      return fail(DiagKind::NonFiniteCost, expr,
                  "this cost expression is not finite (" + std::to_string(x) + " and " +
                      std::to_string(y) + ")");
    return true;
  }
  case ExprKind::Conditional: {
    const auto &c = static_cast<const Conditional &>(expr);
    int64_t cond;
    if (!eval(*c.cond, cond))
      return false;
    return evalReal(cond != 0 ? *c.then : *c.otherwise, out);
  }
  case ExprKind::Call: {
    const auto &call = static_cast<const Call &>(expr);
    for (size_t i = 0; i < call.args.size(); ++i) {
      double v;
      if (!evalReal(*call.args[i], v))
        return false;
      out = i == 0 ? v : call.fn == Builtin::Min ? std::min(out, v) : std::max(out, v);
    }
    return true;
  }
  case ExprKind::Pending: {
    int64_t v;
    if (!eval(expr, v))
      return false;
    out = double(v);
    return true;
  }
  }
  return false;
}

bool Evaluator::binary(const Binary &e, int64_t &out) {
  int64_t a, b;
  if (!eval(*e.lhs, a))
    return false;
  // && and || short-circuit, so `d != 0 && n / d > 1` is safe.
  if (e.op == BinaryOp::And && a == 0) return (out = 0, true);
  if (e.op == BinaryOp::Or && a != 0) return (out = 1, true);
  if (!eval(*e.rhs, b))
    return false;
  auto overflow = [&](const char *what) {
    return fail(DiagKind::IntegerOverflow, e,
                std::string(what) + " of " + std::to_string(a) + " and " + std::to_string(b) +
                    " overflows 64-bit integers");
  };
  switch (e.op) {
  case BinaryOp::Add: return __builtin_add_overflow(a, b, &out) ? overflow("the sum") : true;
  case BinaryOp::Sub: return __builtin_sub_overflow(a, b, &out) ? overflow("the difference") : true;
  case BinaryOp::Mul: return __builtin_mul_overflow(a, b, &out) ? overflow("the product") : true;
  case BinaryOp::Div:
  case BinaryOp::Mod: {
    if (b == 0)
      return fail(DiagKind::DivisionByZero, e,
                  std::string(e.op == BinaryOp::Div ? "division" : "remainder") + " by zero");
    if (a == std::numeric_limits<int64_t>::min() && b == -1) {
      if (e.op == BinaryOp::Mod)
        return (out = 0, true);
      return overflow("the quotient");
    }
    int64_t q = a / b, r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) { // round toward negative infinity
      q -= 1;
      r += b;
    }
    out = e.op == BinaryOp::Div ? q : r;
    return true;
  }
  case BinaryOp::Lt: out = a < b; return true;
  case BinaryOp::Le: out = a <= b; return true;
  case BinaryOp::Gt: out = a > b; return true;
  case BinaryOp::Ge: out = a >= b; return true;
  case BinaryOp::Eq: out = a == b; return true;
  case BinaryOp::Ne: out = a != b; return true;
  case BinaryOp::And: out = b != 0; return true;
  case BinaryOp::Or: out = b != 0; return true;
  }
  return false;
}

static void collectNames(const Expr &e, std::vector<const NameRef *> &names) {
  switch (e.kind) {
  case ExprKind::Int: case ExprKind::Float: break;
  case ExprKind::Pending:
    if (const ExprPtr &chunk = static_cast<const Pending &>(e).chunk)
      collectNames(*chunk, names);
    break;
  case ExprKind::Name: {
    const auto *ref = static_cast<const NameRef *>(&e);
    bool seen = std::any_of(names.begin(), names.end(),
                            [&](const NameRef *n) { return n->varId == ref->varId; });
    if (!seen)
      names.push_back(ref);
    break;
  }
  case ExprKind::Unary: collectNames(*static_cast<const Unary &>(e).operand, names); break;
  case ExprKind::Binary:
    collectNames(*static_cast<const Binary &>(e).lhs, names);
    collectNames(*static_cast<const Binary &>(e).rhs, names);
    break;
  case ExprKind::Conditional: {
    const auto &c = static_cast<const Conditional &>(e);
    collectNames(*c.cond, names);
    collectNames(*c.then, names);
    collectNames(*c.otherwise, names);
    break;
  }
  case ExprKind::Call:
    for (const ExprPtr &arg : static_cast<const Call &>(e).args)
      collectNames(*arg, names);
    break;
  }
}

std::string Evaluator::describeNames(const Expr &expr) const {
  std::vector<const NameRef *> names;
  collectNames(expr, names);
  std::string text;
  for (const NameRef *n : names) {
    if (!text.empty())
      text += ", ";
    text += n->name + " = " + std::to_string(env_[n->varId]);
  }
  return text;
}

} // namespace pipec
