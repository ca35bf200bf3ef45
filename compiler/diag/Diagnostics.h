// Diagnostics: every user-facing message pipec produces goes through here.
//
// Phases report into a DiagnosticEngine, which collects (never throws) so one run
// can show many problems. Rendering is separate (DiagnosticRenderer.h), so the
// same collected list can be printed as text today and as JSON/SARIF later.
#pragma once

#include "support/ResourceLimits.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"

#include <cstdint>
#include <deque>
#include <string>
#include <type_traits>
#include <vector>

namespace llvm {
class SourceMgr; // llvm/Support/SourceMgr.h, in the .cpp files that use it
}

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
  const char *text; // a warning's wording, with {0}, {1}, ...; null: the site words it
};

const DiagKindInfo &diagInfo(DiagKind kind);
llvm::ArrayRef<DiagKindInfo> allDiagKinds();

// The registry's wording of `kind` with each {N} replaced by args[N].
std::string diagTextFrom(DiagKind kind, llvm::ArrayRef<std::string> args);

// An argument as it reads in a message: text as is, numbers in decimal.
inline std::string diagArg(std::string text) { return text; }
inline std::string diagArg(llvm::StringRef text) { return text.str(); }
inline std::string diagArg(const char *text) { return text; }
template <typename Int, std::enable_if_t<std::is_integral_v<Int>, int> = 0>
std::string diagArg(Int value) {
  return std::to_string(value);
}
std::string diagArg(double value); // the shortest text that reads back the same

template <typename... Args> std::string diagText(DiagKind kind, const Args &...args) {
  return diagTextFrom(kind, {diagArg(args)...});
}

// How each warning is reported, as -W flags set it (see WarningFlags.h). Each
// list is indexed by kind; a kind past its end has the default (false).
struct WarningPolicy {
  std::vector<bool> disabled;   // -Wno-X: not reported at all
  std::vector<bool> asError;    // -Werror=X: reported as an error
  std::vector<bool> notWerror;  // -Wno-error=X: does not fail the run under --werror
  bool isDisabled(DiagKind kind) const { return at(disabled, kind); }
  bool isError(DiagKind kind) const { return at(asError, kind); }
  bool isExemptFromWerror(DiagKind kind) const { return at(notWerror, kind); }

private:
  static bool at(const std::vector<bool> &flags, DiagKind kind) {
    auto index = static_cast<size_t>(kind);
    return index < flags.size() && flags[index];
  }
};

struct DiagNote {
  llvm::SMRange range; // empty: the note has no source location
  std::string message;
};

struct DiagFixIt {
  llvm::SMRange range; // the text to replace; empty: an insertion point
  std::string replacement;
};

struct Diagnostic {
  DiagKind kind;
  Severity severity;
  llvm::SMRange range; // empty: no source location (command-line problems)
  std::string message;
  std::vector<DiagNote> notes;
  std::vector<DiagFixIt> fixits;
  unsigned repeats = 0; // further identical reports folded into this one

  Diagnostic &note(llvm::SMRange at, std::string text) {
    notes.push_back({at, std::move(text)});
    return *this;
  }
  Diagnostic &note(std::string text) { return note({}, std::move(text)); }
  Diagnostic &fixit(llvm::SMRange at, std::string replacement) {
    fixits.push_back({at, std::move(replacement)});
    return *this;
  }
};

// Where a location is in its buffer. "\n", "\r\n" and a lone "\r" each end a line.
struct SourcePosition {
  unsigned buffer = 0;       // 0: the location is in no buffer
  unsigned line = 0;         // 1-based
  unsigned column = 0;       // 1-based, in bytes
  llvm::StringRef lineText;  // the whole line, without its line end
};

// Line and column lookup over a SourceMgr's buffers (llvm::SourceMgr counts only
// "\n"). Each buffer's line starts are found once, on first use.
class SourceLines {
public:
  explicit SourceLines(const llvm::SourceMgr &sources) : sources_(sources) {}
  SourcePosition locate(llvm::SMLoc loc) const;

private:
  const llvm::SourceMgr &sources_;
  mutable std::vector<std::vector<size_t>> lineStarts_; // [buffer id - 1]
};

class DiagnosticEngine {
public:
  explicit DiagnosticEngine(llvm::SourceMgr &sources);
  ~DiagnosticEngine();

  // Like clang's -ferror-limit: after this many errors, one TooManyErrors
  // diagnostic is kept and every later report is dropped (still counted).
  // 0: no limit.
  static constexpr unsigned kDefaultErrorLimit = limits::kErrorsShown;
  void setErrorLimit(unsigned limit) { errorLimit_ = limit; }
  unsigned errorLimit() const { return errorLimit_; }
  // Warnings a policy turns off are dropped (not counted); those it makes
  // errors are reported, counted and limited as errors.
  void setWarningPolicy(WarningPolicy policy) { policy_ = std::move(policy); }
  const WarningPolicy &warningPolicy() const { return policy_; }
  // True once the limit was hit: phases may stop early, nothing more is shown.
  bool stopped() const { return stopped_; }

  // Reports a diagnostic; the returned reference stays valid (notes can be added).
  // Past the error limit, or for a disabled warning, it is a scratch diagnostic
  // that is never shown.
  Diagnostic &report(DiagKind kind, llvm::SMRange at, std::string message);
  Diagnostic &report(DiagKind kind, std::string message) {
    return report(kind, llvm::SMRange(), std::move(message));
  }
  // Like report, but a second report of the same kind at the same place (the same
  // source line reached on another rank or iteration) only bumps `repeats`.
  // Returns null for such a repeat.
  Diagnostic *reportOnce(DiagKind kind, llvm::SMRange at, std::string message);

  // A warning in the registry's wording (diagText).
  template <typename... Args>
  Diagnostic &warn(DiagKind kind, llvm::SMRange at, const Args &...args) {
    return report(kind, at, diagText(kind, args...));
  }
  template <typename... Args>
  Diagnostic *warnOnce(DiagKind kind, llvm::SMRange at, const Args &...args) {
    return reportOnce(kind, at, diagText(kind, args...));
  }

  bool hasErrors() const { return errors_ > 0; }
  unsigned errorCount() const { return errors_; }
  unsigned warningCount() const { return warnings_; }
  // The warnings that fail a run under --werror (all but -Wno-error=X ones).
  unsigned werrorWarningCount() const { return werrorWarnings_; }
  const std::deque<Diagnostic> &diagnostics() const { return diags_; }
  llvm::SourceMgr &sources() const { return sources_; }

  SourcePosition locate(llvm::SMLoc loc) const { return lines_.locate(loc); }

private:
  llvm::SourceMgr &sources_;
  std::deque<Diagnostic> diags_; // deque: references stay valid as it grows
  llvm::DenseMap<std::pair<unsigned, const char *>, size_t> seen_;
  unsigned errors_ = 0;
  unsigned warnings_ = 0;
  unsigned werrorWarnings_ = 0;
  unsigned errorLimit_ = kDefaultErrorLimit;
  bool stopped_ = false;
  WarningPolicy policy_;
  Diagnostic discarded_; // what report() hands out past the limit
  SourceLines lines_;
};

// Quotes bytes for a message: control characters become escapes ("\0", "\x01",
// "\t"), everything else is kept. A NUL or an escape sequence printed raw would
// garble a terminal or a log.
std::string escapeControlCharacters(llvm::StringRef text);

// Returns the candidate closest to `word` by edit distance, or "" if none is close.
std::string closestMatch(llvm::StringRef word, llvm::ArrayRef<llvm::StringRef> candidates);

} // namespace pipec
