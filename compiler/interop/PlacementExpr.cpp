#include "interop/PlacementExpr.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <functional>
#include <map>

namespace pipec {

namespace {

using Tokens = std::vector<std::string>;

Tokens split(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef, 16> parts;
  text.split(parts, ' ', -1, /*KeepEmpty=*/false);
  return Tokens(parts.begin(), parts.end());
}

void append(Tokens &to, const Tokens &from) { to.insert(to.end(), from.begin(), from.end()); }

// A balanced lookup on `key` over runs of equal leaves: its size grows with the
// number of runs, its nesting with their logarithm.
Tokens lookup(const Tokens &key, const std::vector<std::string> &leaves) {
  std::vector<size_t> starts; // first index of each run of equal leaves
  for (size_t i = 0; i < leaves.size(); ++i)
    if (i == 0 || leaves[i] != leaves[i - 1])
      starts.push_back(i);
  std::function<void(size_t, size_t, Tokens &)> build = [&](size_t lo, size_t hi, Tokens &out) {
    if (hi - lo == 1) {
      out.push_back(leaves[starts[lo]]);
      return;
    }
    size_t mid = (lo + hi) / 2;
    out.push_back("(");
    append(out, key);
    append(out, {"<", std::to_string(starts[mid]), "?"});
    build(lo, mid, out);
    out.push_back(":");
    build(mid, hi, out);
    out.push_back(")");
  };
  Tokens out;
  build(0, starts.size(), out);
  return out;
}

std::vector<std::string> asText(const std::vector<int64_t> &values) {
  std::vector<std::string> text;
  for (int64_t v : values)
    text.push_back(std::to_string(v));
  return text;
}

int bitWidth(int64_t v) {
  int bits = 1;
  while (bits < 62 && (v >> bits) != 0)
    ++bits;
  return bits;
}

} // namespace

StageExpr closedFormOrLookup(const std::vector<int64_t> &values, int64_t ranks) {
  using Formula = std::function<int64_t(int64_t)>;
  int64_t R = ranks, S = static_cast<int64_t>(values.size());
  std::string r = std::to_string(R);
  const std::pair<std::string, Formula> candidates[] = {
      {std::to_string(values[0]), [&](int64_t) { return values[0]; }},
      {"s", [](int64_t s) { return s; }},
      {std::to_string(S - 1) + " - s", [&](int64_t s) { return S - 1 - s; }},
      {"s % " + r, [&](int64_t s) { return s % R; }},
      {"s / " + r, [&](int64_t s) { return s / R; }},
      {"s < " + r + " ? s : " + std::to_string(2 * R - 1) + " - s",
       [&](int64_t s) { return s < R ? s : 2 * R - 1 - s; }},
      {"s < " + r + " ? 0 : 1", [&](int64_t s) { return s < R ? 0 : 1; }},
  };
  for (const auto &[text, formula] : candidates) {
    bool matches = true;
    for (int64_t s = 0; s < S && matches; ++s)
      matches = formula(s) == values[s];
    if (matches)
      return {split(text), {}};
  }
  return {lookup({"s"}, asText(values)), {}};
}

StageExpr packedTables(const std::vector<int64_t> &values, const std::string &prefix) {
  const size_t S = values.size();
  const int bits = bitWidth(*std::max_element(values.begin(), values.end()));
  // k values per constant: the lookup that picks a constant costs about 8
  // tokens per constant, the one that unpacks a value about 10 per position.
  const size_t maxPerTable = static_cast<size_t>(62 / bits);
  size_t perTable = 1, best = SIZE_MAX;
  for (size_t k = 1; k <= std::min(maxPerTable, S); ++k) {
    size_t cost = 8 * ((S + k - 1) / k) + 10 * k;
    if (cost < best)
      best = cost, perTable = k;
  }

  StageExpr expr;
  std::map<int64_t, std::string> letFor; // equal tables share one let
  std::vector<std::string> tableOfStage;
  for (size_t first = 0; first < S; first += perTable) {
    int64_t table = 0;
    for (size_t j = 0; j < perTable && first + j < S; ++j)
      table |= values[first + j] << (bits * j);
    auto [it, added] = letFor.try_emplace(table, prefix + "_" + std::to_string(letFor.size()));
    if (added)
      expr.lets.push_back({it->second, table});
    for (size_t j = 0; j < perTable && first + j < S; ++j)
      tableOfStage.push_back(it->second);
  }
  Tokens table = lookup({"s"}, tableOfStage);
  if (perTable == 1) {
    expr.tokens = table;
    return expr;
  }
  std::vector<std::string> shifts; // position j in a table -> 2^(bits * j)
  for (size_t j = 0; j < perTable; ++j)
    shifts.push_back(std::to_string(int64_t(1) << (bits * j)));
  Tokens &out = expr.tokens;
  append(out, {"("});
  append(out, table);
  append(out, {")", "/", "("});
  append(out, lookup({"s", "%", std::to_string(perTable)}, shifts));
  append(out, {")", "%", std::to_string(int64_t(1) << bits)});
  return expr;
}

} // namespace pipec
