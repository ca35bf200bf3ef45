// The diagnostic registry table and the collecting engine.
#include "diag/Diagnostics.h"

#include "llvm/Support/SourceMgr.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

namespace pipec {

static const DiagKindInfo kKinds[] = {
#define DIAG(Name, Sev, Summary) {#Name, Severity::Sev, Summary, nullptr},
#define WARNING(Name, Summary, Text) {#Name, Severity::Warning, Summary, Text},
#include "diag/DiagnosticKinds.def"
};

const DiagKindInfo &diagInfo(DiagKind kind) {
  auto index = static_cast<size_t>(kind);
  assert(index < std::size(kKinds));
  return kKinds[index];
}

llvm::ArrayRef<DiagKindInfo> allDiagKinds() { return kKinds; }

std::string diagTextFrom(DiagKind kind, llvm::ArrayRef<std::string> args) {
  const char *text = diagInfo(kind).text;
  assert(text && "the kind has no wording in the registry");
  std::string out;
  for (const char *p = text; *p; ++p) {
    unsigned index = 0;
    const char *q = p + 1;
    if (*p == '{' && *q >= '0' && *q <= '9') {
      while (*q >= '0' && *q <= '9')
        index = index * 10 + unsigned(*q++ - '0');
      if (*q == '}' && index < args.size()) {
        out += args[index];
        p = q;
        continue;
      }
    }
    out += *p; // not a placeholder, or one without its argument: kept as written
  }
  return out;
}

std::string diagArg(double value) { return fmt::format("{}", value); }

DiagnosticEngine::DiagnosticEngine(llvm::SourceMgr &sources) : sources_(sources), lines_(sources) {}
DiagnosticEngine::~DiagnosticEngine() = default;

Diagnostic &DiagnosticEngine::report(DiagKind kind, llvm::SMRange at, std::string message) {
  Severity severity = diagInfo(kind).severity;
  if (severity == Severity::Warning && policy_.isDisabled(kind)) {
    discarded_ = Diagnostic{kind, severity, at, {}, {}, {}, 0};
    return discarded_;
  }
  if (severity == Severity::Warning && policy_.isError(kind))
    severity = Severity::Error;
  if (severity == Severity::Warning && !policy_.isExemptFromWerror(kind))
    werrorWarnings_++;
  (severity == Severity::Error ? errors_ : warnings_)++;
  if (!stopped_ && severity == Severity::Error && errorLimit_ != 0 && errors_ > errorLimit_) {
    stopped_ = true;
    diags_.push_back(Diagnostic{DiagKind::TooManyErrors, Severity::Error, {},
                                "too many errors emitted, stopping now (--error-limit=0 shows all)",
                                {}, {}, 0});
  }
  if (stopped_) {
    discarded_ = Diagnostic{kind, severity, at, {}, {}, {}, 0};
    return discarded_;
  }
  diags_.push_back(Diagnostic{kind, severity, at, std::move(message), {}, {}, 0});
  return diags_.back();
}

Diagnostic *DiagnosticEngine::reportOnce(DiagKind kind, llvm::SMRange at, std::string message) {
  if (diagInfo(kind).severity == Severity::Warning && policy_.isDisabled(kind))
    return nullptr; // never shown, so there is nothing to fold repeats into
  if (stopped_) {
    report(kind, at, {}); // counted, not shown
    return nullptr;
  }
  auto key = std::make_pair(static_cast<unsigned>(kind), at.Start.getPointer());
  auto [it, inserted] = seen_.try_emplace(key, diags_.size());
  if (!inserted) {
    diags_[it->second].repeats++;
    return nullptr;
  }
  return &report(kind, at, std::move(message));
}

SourcePosition SourceLines::locate(llvm::SMLoc loc) const {
  SourcePosition pos;
  if (!loc.isValid())
    return pos;
  pos.buffer = sources_.FindBufferContainingLoc(loc);
  if (pos.buffer == 0)
    return pos;
  llvm::StringRef text = sources_.getMemoryBuffer(pos.buffer)->getBuffer();
  if (lineStarts_.size() < pos.buffer)
    lineStarts_.resize(pos.buffer);
  std::vector<size_t> &starts = lineStarts_[pos.buffer - 1];
  if (starts.empty()) {
    starts.push_back(0);
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n')
        ++i;
      if (text[i] == '\n' || text[i] == '\r')
        starts.push_back(i + 1);
    }
  }
  size_t offset = static_cast<size_t>(loc.getPointer() - text.data());
  // The last line start at or before the location.
  size_t line = std::upper_bound(starts.begin(), starts.end(), offset) - starts.begin();
  size_t start = starts[line - 1];
  size_t end = text.find_first_of("\r\n", start);
  if (end == llvm::StringRef::npos)
    end = text.size();
  pos.line = static_cast<unsigned>(line);
  pos.column = static_cast<unsigned>(offset - start + 1);
  pos.lineText = text.slice(start, end);
  return pos;
}

std::string escapeControlCharacters(llvm::StringRef text) {
  std::string out;
  out.reserve(text.size());
  static const char kHex[] = "0123456789abcdef";
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      out += c;
    } else if (byte == 0) {
      out += "\\0";
    } else if (byte == '\t') {
      out += "\\t";
    } else if (byte == '\n') {
      out += "\\n";
    } else if (byte == '\r') {
      out += "\\r";
    } else {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    }
  }
  return out;
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
