// The expression of the stage variable `s` that gives values[s] for every
// stage, as the import writes it into a `place` statement. The front end caps
// a statement at 2000 tokens, so an irregular placement cannot be one lookup
// per run of equal values: past a few hundred runs the values are packed into
// top-level lets (several values per 64-bit constant) that a short lookup
// selects and unpacks. Forms, in order of preference: a closed form (s,
// s % R, ...), a lookup over runs, packed tables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipec {

struct StageExpr {
  std::vector<std::string> tokens;              // the expression, one token each
  std::vector<std::pair<std::string, int64_t>> lets; // constants it reads, in order
};

// `prefix` names the lets (prefix + "_0", ...); `ranks` is R in the closed forms.
StageExpr closedFormOrLookup(const std::vector<int64_t> &values, int64_t ranks);
StageExpr packedTables(const std::vector<int64_t> &values, const std::string &prefix);

// A statement's token limit in the front end (syntax/Parser.cpp).
constexpr size_t kMaxStatementTokens = 2000;

} // namespace pipec
