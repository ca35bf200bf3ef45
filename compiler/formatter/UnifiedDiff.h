// A unified diff (`diff -u` format, 3 lines of context) for `pipec fmt --check`.
#pragma once

#include "llvm/ADT/StringRef.h"

#include <string>

namespace pipec::formatter {

// "" when the texts are equal. Both headers name `path` (as `patch -p0` reads them).
std::string unifiedDiff(llvm::StringRef before, llvm::StringRef after, llvm::StringRef path);

} // namespace pipec::formatter
