// The diagnostic registry table and the collecting engine.
#include "diag/Diagnostics.h"

#include <algorithm>
#include <cassert>

namespace pipec {

static const DiagKindInfo kKinds[] = {
#define DIAG(Name, Sev, Summary) {#Name, Severity::Sev, Summary},
#include "diag/DiagnosticKinds.def"
};

const DiagKindInfo &diagInfo(DiagKind kind) {
  auto index = static_cast<size_t>(kind);
  assert(index < std::size(kKinds));
  return kKinds[index];
}

llvm::ArrayRef<DiagKindInfo> allDiagKinds() { return kKinds; }

Diagnostic &DiagnosticEngine::report(DiagKind kind, llvm::SMRange at, std::string message) {
  Severity severity = diagInfo(kind).severity;
  (severity == Severity::Error ? errors_ : warnings_)++;
  diags_.push_back(Diagnostic{kind, severity, at, std::move(message), {}, {}, 0});
  return diags_.back();
}

Diagnostic *DiagnosticEngine::reportOnce(DiagKind kind, llvm::SMRange at, std::string message) {
  auto key = std::make_pair(static_cast<unsigned>(kind), at.Start.getPointer());
  auto [it, inserted] = seen_.try_emplace(key, diags_.size());
  if (!inserted) {
    diags_[it->second].repeats++;
    return nullptr;
  }
  return &report(kind, at, std::move(message));
}

std::string closestMatch(llvm::StringRef word, llvm::ArrayRef<llvm::StringRef> candidates) {
  std::string best;
  unsigned bestDistance = ~0u;
  for (llvm::StringRef candidate : candidates) {
    unsigned distance = word.edit_distance(candidate, /*AllowReplacements=*/true);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = candidate.str();
    }
  }
  // Close means: at most a third of the word changed (and at least one edit allowed).
  unsigned allowed = std::max<size_t>(1, (word.size() + 2) / 3);
  return bestDistance <= allowed ? best : std::string();
}

} // namespace pipec
