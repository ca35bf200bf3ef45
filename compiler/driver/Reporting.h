// Shared by the subcommands: print a compilation's diagnostics and pass times,
// and turn them into an exit status.
#pragma once

#include "driver/Commands.h"
#include "frontend/Compilation.h"

#include "diag/LintRenderers.h"

#include "llvm/Support/raw_ostream.h"

#include <functional>

namespace pipec {

// The exit status diagnostics imply: 2 for an unreadable file, 1 for errors (or
// warnings under --werror), else 0.
int exitStatus(const DiagnosticEngine &diags, const CommonArgs &args);
inline int exitStatus(Compilation &compilation, const CommonArgs &args) {
  return exitStatus(compilation.diags(), args);
}

// Prints diagnostics in args.format (text on stderr, or a document for this one
// file on stdout) and pass times if asked; returns exitStatus().
int finish(Compilation &compilation, const CommonArgs &args);

// Prints the pass times on stderr under --time-passes, whatever the format.
void printPassTimes(const Compilation &compilation, const CommonArgs &args);

// Prints the diagnostics of every file as one JSON / SARIF / GitHub document on
// stdout (args.format must not be Text).
void renderLint(llvm::ArrayRef<FileDiagnostics> files, const CommonArgs &args);

// Writes `path` ("-": stdout) through `write`; a file is kept only when complete.
// Prints an error and returns false when it cannot be opened.
bool writeOutputFile(const std::string &path, const std::function<void(llvm::raw_ostream &)> &write);

} // namespace pipec
