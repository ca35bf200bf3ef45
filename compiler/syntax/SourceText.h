// Maps ANTLR's character indices (Unicode code points) back to byte pointers in
// the source buffer, which is what llvm::SourceMgr locations are.
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SMLoc.h"

#include <cstdint>
#include <vector>

namespace pipec {

class SourceText {
public:
  explicit SourceText(llvm::StringRef text);

  const char *pointerAt(size_t codePointIndex) const;
  llvm::SMLoc locAt(size_t codePointIndex) const {
    return llvm::SMLoc::getFromPointer(pointerAt(codePointIndex));
  }
  // The range [first, last] of code points, inclusive (ANTLR's start/stop indices).
  llvm::SMRange rangeOf(size_t first, size_t last) const {
    return {locAt(first), locAt(last + 1)};
  }

private:
  llvm::StringRef text_;
  std::vector<uint32_t> byteOffset_; // empty when the text is pure ASCII
};

} // namespace pipec
