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

// 64 MiB: the largest schedule in the library is a few KB.
constexpr uint64_t kMaxInputBytes = uint64_t(64) << 20;

// The file's contents, named `path`; null with `error` set ("Is a directory",
// "larger than the 64 MiB limit for an input file", ...) when it cannot be read.
std::unique_ptr<llvm::MemoryBuffer> readInputFile(llvm::StringRef path, std::string &error);

} // namespace pipec
