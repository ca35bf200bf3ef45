// The documents the editor has open: each one's newest text, and an analysis of
// it as `pipec check` would make (at its default parameters) while it fits the
// session's memory budget; and the mapping between LSP positions (line, UTF-16
// code unit) and byte offsets.
//
// Memory is bounded across documents: an analysis is estimated at
// kBytesPerOp per elaborated op plus kBytesPerSourceByte per byte of text, and
// the analyses kept together stay within the budget (limits::kLspMemoryBytes,
// `pipec lsp --memory-budget`): the analyses of the documents edited least
// recently are released first (their diagnostics stay published; hover on one
// asks for it again). A document whose analysis alone is over the budget gets
// the warning LspMemoryBudget and keeps none.
#pragma once

#include "frontend/Compilation.h"

#include "llvm/ADT/StringRef.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pipec::lsp {

struct Position {
  unsigned line = 0;      // 0-based
  unsigned character = 0; // 0-based, in UTF-16 code units
};

// Line starts of a text, for converting positions both ways.
class LineIndex {
public:
  explicit LineIndex(llvm::StringRef text);
  Position positionOf(size_t offset) const;
  // Clamped into the text: a position past a line's end is its end.
  size_t offsetOf(Position position) const;

private:
  llvm::StringRef text_;
  std::vector<size_t> starts_;
};

// One analysis: a snapshot of a document's text and what pipec made of it.
struct Document {
  std::string uri;
  std::string path; // the file name diagnostics speak of
  int64_t version = 0;
  std::string text;
  std::unique_ptr<LineIndex> lines;
  // The analysis of `text`: every phase that could run, with its diagnostics.
  // Its buffer is a copy of `text`, so offsets are the same in both.
  std::unique_ptr<Compilation> compilation;

  // The byte offset in `text` of a location in the compilation's buffer.
  std::optional<size_t> offsetOf(llvm::SMLoc loc) const;
  llvm::SMLoc locAt(size_t offset) const;
};

// Analyses a text as `pipec check` would (runs on the analysis thread).
std::unique_ptr<Document> analyseDocument(const std::string &uri, const std::string &path,
                                          int64_t version, std::string text);

// What an analysis is estimated to hold in memory (see the top of this file).
constexpr uint64_t kBytesPerOp = 64, kBytesPerSourceByte = 40;
uint64_t estimatedBytes(const Document &analysis);

// A document as the editor has it now, and its latest analysis.
struct OpenDocument {
  std::string uri, path;
  int64_t version = 0;
  std::string text;                   // the newest text
  uint64_t edit = 0;                  // names the newest change; an analysis of another is stale
  uint64_t touched = 0;               // the session's clock at its last edit or request
  std::unique_ptr<Document> analysis; // of edit `analysedEdit`; null: none yet, or released
  uint64_t analysedEdit = 0;
  bool wanted = true;                 // the newest edit (or a released one) needs analysing
  bool tooLarge = false;              // its newest analysis alone was over the budget
  uint64_t bytes() const { return analysis ? estimatedBytes(*analysis) : 0; }
  // An analysis of the newest text, that requests may be answered from.
  const Document *current() const {
    return analysis && analysedEdit == edit ? analysis.get() : nullptr;
  }
};

class DocumentStore {
public:
  explicit DocumentStore(uint64_t budgetBytes) : budget_(budgetBytes) {}

  OpenDocument &open(const std::string &uri, int64_t version, std::string text);
  // A new text for an open document: it is analysed again (once the loop is idle).
  void change(OpenDocument &document, int64_t version, std::string text);
  void close(const std::string &uri) { documents_.erase(uri); }
  OpenDocument *find(const std::string &uri);
  // A document used by a request: released analyses are asked for again.
  void touch(OpenDocument &document);

  // The next document to analyse, most recently touched first, or null.
  OpenDocument *nextToAnalyse();
  // Releases analyses of other documents, least recently touched first, until the
  // analyses kept and `extra` bytes more (an analysis about to run, estimated as
  // the document's last) fit the budget.
  void makeRoomFor(const OpenDocument &document, uint64_t extra);
  // Keeps an analysis of edit `edit` of its document; null when the document was
  // closed or changed since (the result is stale and dropped).
  OpenDocument *install(std::unique_ptr<Document> analysis, uint64_t edit);
  // Whether an analysis alone is over the budget (it must not be kept).
  bool overBudget(const Document &analysis) const { return estimatedBytes(analysis) > budget_; }
  uint64_t budget() const { return budget_; }

private:
  uint64_t budget_;
  uint64_t clock_ = 0;
  std::map<std::string, OpenDocument> documents_;
};

// The path a file: URI names (percent escapes decoded); other URIs as they are.
std::string pathFromUri(llvm::StringRef uri);

} // namespace pipec::lsp
