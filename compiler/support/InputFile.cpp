#include "support/InputFile.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Errc.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"

#include <algorithm>

namespace pipec {

namespace fs = llvm::sys::fs;

namespace {

constexpr size_t kChunkBytes = size_t(1) << 16;

// Reads `handle` to end of file, stopping one byte past the limit.
bool readToEnd(fs::file_t handle, llvm::SmallVectorImpl<char> &text, std::string &error) {
  for (;;) {
    if (text.size() > kMaxInputBytes) {
      error = "larger than the " + std::to_string(kMaxInputBytes >> 20) +
              " MiB limit for an input file";
      return false;
    }
    size_t size = text.size();
    size_t chunk = std::min<uint64_t>(kChunkBytes, kMaxInputBytes + 1 - size);
    text.resize(size + chunk);
    llvm::Expected<size_t> read =
        fs::readNativeFile(handle, llvm::makeMutableArrayRef(text.data() + size, chunk));
    if (!read) {
      error = llvm::toString(read.takeError());
      return false;
    }
    text.resize(size + *read);
    if (*read == 0)
      return true;
  }
}

} // namespace

std::unique_ptr<llvm::MemoryBuffer> readInputFile(llvm::StringRef path, std::string &error) {
  bool standardInput = path == "-";
  fs::file_t handle = fs::getStdinHandle();
  if (!standardInput) {
    llvm::Expected<fs::file_t> opened = fs::openNativeFileForRead(path);
    if (!opened) {
      error = llvm::toString(opened.takeError());
      return nullptr;
    }
    handle = *opened;
  }
  fs::file_status status;
  bool ok = true;
  if (!fs::status(handle, status) && status.type() == fs::file_type::directory_file) {
    error = std::make_error_code(std::errc::is_a_directory).message();
    ok = false;
  }
  llvm::SmallVector<char, 0> text;
  ok = ok && readToEnd(handle, text, error);
  if (!standardInput)
    fs::closeFile(handle);
  if (!ok)
    return nullptr;
  return llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(text.data(), text.size()),
                                              standardInput ? "<stdin>" : path);
}

} // namespace pipec
