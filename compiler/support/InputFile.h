// Reads one input file (or standard input, "-") whole. Special files (pipes,
// /proc) report no useful size, so everything is read to end of file; and no
// input may exceed kMaxInputBytes, so `pipec check /dev/zero` stops early with
// an error instead of filling memory.
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <string>

namespace pipec {

// 12 MiB, set by memory: the largest schedule in the library is a few KB, but
// checking or simulating an input peaks at up to about 120 bytes of memory per
// input byte (measured on the worst shapes: `F;B;` op lists with no spaces,
// 900-term expressions, `F(0,mb=0);` lists), so a 12 MiB input peaks near 1.5 GB.
// A few bytes per op of that are the source itself; most are the token list
// (48 bytes a token), the AST and the elaborated ops.
constexpr uint64_t kMaxInputBytes = uint64_t(12) << 20;

// The file's contents, named `path`; null with `error` set ("Is a directory",
// "larger than the 12 MiB limit for an input file", ...) when it cannot be read.
std::unique_ptr<llvm::MemoryBuffer> readInputFile(llvm::StringRef path, std::string &error);

} // namespace pipec
