// Machine-readable diagnostics for CI: JSON, SARIF 2.1.0 (code scanning) and
// GitHub workflow annotations. All take every checked file at once, so one run
// over many files yields one document.
#pragma once

#include "diag/Diagnostics.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace pipec {

// A file checked over a domain of parameter values: the counts, and the values
// each diagnostic was found at (diagnostics found once, before any point, have
// none).
struct PointSummary {
  std::string description; // "P in 2..17, M in P..8*P+1"
  uint64_t points = 0, ok = 0, unsupported = 0, failed = 0, unchecked = 0;
  std::string failingPoint; // "P=8, M=16": the failing point reported; empty: none
  bool overBudget = false;  // stopped: the points together exceed --max-ops
  std::vector<std::vector<std::pair<std::string, int64_t>>> params; // per diagnostic
};

struct FileDiagnostics {
  std::string path;
  const DiagnosticEngine *engine;
  const PointSummary *domain = nullptr; // null: checked at one point
};

void renderJson(llvm::ArrayRef<FileDiagnostics> files, llvm::raw_ostream &out);
void renderSarif(llvm::ArrayRef<FileDiagnostics> files, llvm::raw_ostream &out);
void renderGithub(llvm::ArrayRef<FileDiagnostics> files, llvm::raw_ostream &out);

} // namespace pipec
