#include "lsp/DocumentStore.h"

#include "support/InputFile.h"

#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>

namespace pipec::lsp {

LineIndex::LineIndex(llvm::StringRef text) : text_(text) {
  starts_.push_back(0);
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n' || (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n')))
      starts_.push_back(i + 1);
}

// UTF-16 code units of the UTF-8 sequence starting with `lead`.
static unsigned utf16Units(unsigned char lead) { return lead >= 0xF0 ? 2 : 1; }
static bool isContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

Position LineIndex::positionOf(size_t offset) const {
  offset = std::min(offset, text_.size());
  size_t line = size_t(std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin()) - 1;
  unsigned character = 0;
  for (size_t i = starts_[line]; i < offset; ++i)
    if (!isContinuation(text_[i]))
      character += utf16Units(static_cast<unsigned char>(text_[i]));
  return {unsigned(line), character};
}

size_t LineIndex::offsetOf(Position position) const {
  if (position.line >= starts_.size())
    return text_.size();
  size_t offset = starts_[position.line];
  size_t end = position.line + 1 < starts_.size() ? starts_[position.line + 1] : text_.size();
  while (end > offset && (text_[end - 1] == '\n' || text_[end - 1] == '\r'))
    --end;
  for (unsigned units = 0; offset < end && units < position.character;) {
    units += utf16Units(static_cast<unsigned char>(text_[offset]));
    ++offset;
    while (offset < end && isContinuation(text_[offset]))
      ++offset;
  }
  return offset;
}

std::optional<size_t> Document::offsetOf(llvm::SMLoc loc) const {
  if (!loc.isValid() || !compilation)
    return std::nullopt;
  const llvm::MemoryBuffer *buffer = compilation->sources().getMemoryBuffer(1);
  const char *at = loc.getPointer();
  if (at < buffer->getBufferStart() || at > buffer->getBufferEnd())
    return std::nullopt;
  return size_t(at - buffer->getBufferStart());
}

llvm::SMLoc Document::locAt(size_t offset) const {
  const llvm::MemoryBuffer *buffer = compilation->sources().getMemoryBuffer(1);
  return llvm::SMLoc::getFromPointer(buffer->getBufferStart() +
                                     std::min(offset, buffer->getBufferSize()));
}

static int hexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  c = char(c | 0x20);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

std::string pathFromUri(llvm::StringRef uri) {
  if (!uri.consume_front("file://"))
    return uri.str();
  std::string path;
  for (size_t i = 0; i < uri.size(); ++i) {
    if (uri[i] == '%' && i + 2 < uri.size() && hexValue(uri[i + 1]) >= 0 &&
        hexValue(uri[i + 2]) >= 0) {
      path += char(hexValue(uri[i + 1]) * 16 + hexValue(uri[i + 2]));
      i += 2;
    } else {
      path += uri[i];
    }
  }
  return path;
}

Document &DocumentStore::update(const std::string &uri, int64_t version, std::string text) {
  Document &document = documents_[uri];
  document.uri = uri;
  document.path = pathFromUri(uri);
  document.version = version;
  document.text = std::move(text);
  document.lines = std::make_unique<LineIndex>(document.text);
  document.compilation = Compilation::fromText(document.path, document.text);
  if (document.text.size() > kMaxInputBytes)
    document.compilation->diags().report(
        DiagKind::FileNotReadable,
        "the document is larger than the 12 MiB limit for an input file; not analysed");
  else
    document.compilation->runAll(ElabOptions(), CheckOptions());
  return document;
}

Document *DocumentStore::find(const std::string &uri) {
  auto it = documents_.find(uri);
  return it == documents_.end() ? nullptr : &it->second;
}

} // namespace pipec::lsp
