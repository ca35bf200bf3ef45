#include "syntax/SourceText.h"

#include <algorithm>

namespace pipec {

SourceText::SourceText(llvm::StringRef text) : text_(text) {
  bool ascii = std::all_of(text.begin(), text.end(),
                           [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (ascii)
    return;
  // One entry per code point: the byte offset where it starts (input is valid UTF-8).
  byteOffset_.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80)
      byteOffset_.push_back(static_cast<uint32_t>(i));
  byteOffset_.push_back(static_cast<uint32_t>(text.size()));
}

const char *SourceText::pointerAt(size_t index) const {
  if (byteOffset_.empty())
    return text_.data() + std::min(index, text_.size());
  index = std::min(index, byteOffset_.size() - 1);
  return text_.data() + byteOffset_[index];
}

} // namespace pipec
