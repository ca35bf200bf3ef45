// Machine-readable diagnostics for CI: JSON, SARIF 2.1.0 (code scanning) and
// GitHub workflow annotations. All take every checked file at once, so one run
// over many files yields one document.
#pragma once

#include "diag/Diagnostics.h"

#include "llvm/ADT/ArrayRef.h"

#include <string>

namespace llvm {
class raw_ostream;
}

namespace pipec {

struct FileDiagnostics {
  std::string path;
  const DiagnosticEngine *engine;
};

void renderJson(llvm::ArrayRef<FileDiagnostics> files, llvm::raw_ostream &out);
void renderSarif(llvm::ArrayRef<FileDiagnostics> files, llvm::raw_ostream &out);
void renderGithub(llvm::ArrayRef<FileDiagnostics> files, llvm::raw_ostream &out);

} // namespace pipec
