// Diagnostics: every user-facing message pipec produces goes through here.
//
// Phases report into a DiagnosticEngine, which collects (never throws) so one run
// can show many problems. Rendering is separate (DiagnosticRenderer.h), so the
// same collected list can be printed as text today and as JSON/SARIF later.
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace pipec {

enum class Severity : uint8_t { Error, Warning, Note };

enum class DiagKind : uint16_t {
#define DIAG(Name, Sev, Summary) Name,
#include "diag/DiagnosticKinds.def"
};

struct DiagKindInfo {
  const char *name;
  Severity severity;
  const char *summary;
};

const DiagKindInfo &diagInfo(DiagKind kind);
llvm::ArrayRef<DiagKindInfo> allDiagKinds();

struct DiagNote {
  llvm::SMRange range; // empty: the note has no source location
  std::string message;
};

struct Diagnostic {
  DiagKind kind;
  Severity severity;
  llvm::SMRange range; // empty: no source location (command-line problems)
  std::string message;
  std::vector<DiagNote> notes;
  std::vector<llvm::SMFixIt> fixits;
  unsigned repeats = 0; // further identical reports folded into this one

  Diagnostic &note(llvm::SMRange at, std::string text) {
    notes.push_back({at, std::move(text)});
    return *this;
  }
  Diagnostic &note(std::string text) { return note({}, std::move(text)); }
  Diagnostic &fixit(llvm::SMRange at, std::string replacement) {
    fixits.emplace_back(at, replacement);
    return *this;
  }
};

class DiagnosticEngine {
public:
  explicit DiagnosticEngine(llvm::SourceMgr &sources) : sources_(sources) {}

  // Reports a diagnostic; the returned reference stays valid (notes can be added).
  Diagnostic &report(DiagKind kind, llvm::SMRange at, std::string message);
  Diagnostic &report(DiagKind kind, std::string message) {
    return report(kind, llvm::SMRange(), std::move(message));
  }
  // Like report, but a second report of the same kind at the same place (the same
  // source line reached on another rank or iteration) only bumps `repeats`.
  // Returns null for such a repeat.
  Diagnostic *reportOnce(DiagKind kind, llvm::SMRange at, std::string message);

  bool hasErrors() const { return errors_ > 0; }
  unsigned errorCount() const { return errors_; }
  unsigned warningCount() const { return warnings_; }
  const std::deque<Diagnostic> &diagnostics() const { return diags_; }
  llvm::SourceMgr &sources() const { return sources_; }

private:
  llvm::SourceMgr &sources_;
  std::deque<Diagnostic> diags_; // deque: references stay valid as it grows
  llvm::DenseMap<std::pair<unsigned, const char *>, size_t> seen_;
  unsigned errors_ = 0;
  unsigned warnings_ = 0;
};

// Returns the candidate closest to `word` by edit distance, or "" if none is close.
std::string closestMatch(llvm::StringRef word, llvm::ArrayRef<llvm::StringRef> candidates);

} // namespace pipec
