// User text (a schedule's file name) that ends up in generated code or in the
// names of generated files. A file name may hold anything, newlines included:
// written raw, it could end a comment early or reach a compiler's line markers.
#pragma once

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace pipec {

// `text` with every control character replaced by '?': safe in a // comment.
inline std::string commentSafe(llvm::StringRef text) {
  std::string safe;
  for (char c : text)
    safe += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
  return safe;
}

// `text` with everything but letters, digits, '_', '-' and '.' replaced by '_',
// and never empty, '.' or '..': a file name that needs no quoting anywhere.
inline std::string fileNameSafe(llvm::StringRef text, llvm::StringRef fallback) {
  std::string safe;
  for (char c : text)
    safe += llvm::isAlnum(c) || c == '_' || c == '-' || c == '.' ? c : '_';
  if (safe.empty() || safe == "." || safe == ".." || safe == "-")
    return fallback.str();
  return safe;
}

} // namespace pipec
