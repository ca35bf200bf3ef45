// Inputs in a format other than .pipe, read where a .pipe is expected
// (`pipec check schedule.csv`). The formats live above this layer (interop/), so
// the driver registers a translator per file extension at start-up, and
// Compilation::load runs it on the file's buffer: the translator reports the
// input's own errors located in it, and returns the id of a new buffer holding
// the .pipe text the later phases read, or 0 when it reported errors.
#pragma once

#include "diag/Diagnostics.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SourceMgr.h"

#include <string>

namespace pipec {

using InputTranslator = unsigned (*)(llvm::SourceMgr &sources, DiagnosticEngine &diags,
                                     const std::string &path, unsigned input);

// `extension` with its dot, compared without case (".csv").
void registerInputTranslator(llvm::StringRef extension, InputTranslator translate);
// The translator for `path`, or null for .pipe text.
InputTranslator inputTranslatorFor(llvm::StringRef path);

} // namespace pipec
