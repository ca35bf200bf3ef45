// The parameter domain of a check: the points (one value per parameter) at which
// a schedule family is elaborated and checked. It is the cartesian product of the
// domains the file declares (`domain P in 2..17;`), each overridden by a -D of
// its parameter, then of the -D's of parameters without a declared domain (in
// the order the parameters are declared). Axes
// are enumerated in that order, each range or list evaluated with the values the
// axes before it chose, so points come out lexicographically ordered.
#pragma once

#include "diag/Diagnostics.h"
#include "elab/Elaborator.h"
#include "syntax/AST.h"

#include "llvm/ADT/ArrayRef.h"

#include <optional>
#include <string>
#include <vector>

namespace pipec {

// One -D as the command line wrote it.
struct ParamDefine {
  std::string name;
  std::string text;             // "NAME=..." as written, for messages
  std::vector<int64_t> values;  // NAME=V or NAME=v1,v2,...
  std::string range;            // NAME=A..B: "A..B" (values is then empty)
  bool single() const { return range.empty() && values.size() == 1; }
};

// Parses the text of one -D: NAME=V, NAME=v1,v2,... or NAME=A..B. Returns an
// explanation of what is wrong, or "" when it parsed.
std::string parseParamDefine(llvm::StringRef text, ParamDefine &out);

inline constexpr uint64_t kDefaultMaxPoints = limits::kMaxPoints;

// One factor of the product.
struct DomainAxis {
  int param = -1;           // index into Schedule::params
  std::string description;  // "P in 2..17", "v in {1, 2, 4}", "P=8"
  ast::SMRange at;          // where the values are written
  const ast::Expr *lo = nullptr, *hi = nullptr; // a range
  const ast::Expr *step = nullptr;              // `step E` on a range; null: 1
  std::vector<const ast::Expr *> items;         // a list of expressions
  std::vector<int64_t> values;                  // a list of numbers (-D)
};

using ParamValues = std::vector<std::pair<std::string, int64_t>>;

struct ParameterDomain {
  std::vector<DomainAxis> axes;
  std::vector<std::string> names;           // each axis's parameter
  std::vector<std::vector<int64_t>> points; // one value per axis, in order
  std::vector<ast::ExprPtr> owned;          // the parsed -D bounds

  // "P in 2..17, M in P..8*P+1"
  std::string description() const;
  // The values of point i, one per axis.
  ParamValues valuesAt(size_t i) const;
  // "P=8, M=16"
  std::string describe(size_t i) const;
  // `base` with the values of point i as -D's.
  ElabOptions optionsAt(size_t i, const ElabOptions &base) const;
};

// Builds the domain of `schedule` (names resolved) under `defines`. -D ranges are
// parsed into new buffers of diags.sources(), named "<command line>". Errors (an
// unknown parameter, an empty range, too many points, ...) are reported and give
// nullopt.
std::optional<ParameterDomain> buildDomain(ast::Schedule &schedule,
                                           llvm::ArrayRef<ParamDefine> defines,
                                           uint64_t maxPoints, DiagnosticEngine &diags);

} // namespace pipec
