// `pipec fmt` on one source text: parse it (a file with syntax errors is not
// formatted; one with only errors of meaning is), lay its tokens out (CanonicalLayout.h), then prove the result means the
// same before handing it back.
#pragma once

#include "frontend/Compilation.h"

#include "llvm/ADT/StringRef.h"

#include <memory>
#include <string>

namespace pipec::formatter {

struct FormatResult {
  enum Status {
    Formatted, // `text` is the formatted source
    Rejected,  // the source has syntax errors: `compilation` holds the diagnostics
    Unsafe,    // the layout would change the file (a formatter bug): `problem` says how
  } status = Formatted;
  std::string text;
  std::string problem;
  std::unique_ptr<Compilation> compilation;
};

// Formats `source`, named `name` in diagnostics. The safety net: the formatted
// text must lex to the same tokens and comments, and, when the source elaborates
// at its default parameters, elaborate to the same ops on every rank.
FormatResult formatSource(llvm::StringRef name, llvm::StringRef source);

} // namespace pipec::formatter
