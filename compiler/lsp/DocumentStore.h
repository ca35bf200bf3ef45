// The documents the editor has open, each analysed as `pipec check` would
// analyse it (at its default parameters), and the mapping between LSP positions
// (line, UTF-16 code unit) and byte offsets.
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

class DocumentStore {
public:
  // Stores the text and analyses it; returns the document.
  Document &update(const std::string &uri, int64_t version, std::string text);
  void close(const std::string &uri) { documents_.erase(uri); }
  Document *find(const std::string &uri);

private:
  std::map<std::string, Document> documents_;
};

// The path a file: URI names (percent escapes decoded); other URIs as they are.
std::string pathFromUri(llvm::StringRef uri);

} // namespace pipec::lsp
