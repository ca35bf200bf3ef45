// How a program reads an input file it is given by name (--data, --load's
// checkpoint): only a regular file, only up to a stated size, and never by a
// call that can block. The file is opened non-blocking (a FIFO with no writer
// opens at once instead of waiting for one) and its type checked before a
// byte is read, so /dev/zero, a FIFO, a directory or a link to any of them is
// refused by name instead of read until memory runs out or forever. Files are
// written the same careful way (writeFileReplacing).
#pragma once

#include <cstdint>
#include <string>

namespace pipert {

struct FileRead {
  bool ok = false;
  bool tooLarge = false; // a regular file larger than the cap (`problem` says so)
  bool missing = false;  // there is no such file (yet)
  std::string bytes;   // the whole file, when ok (its first maxBytes, with `prefix`)
  std::string problem; // else why not: "cannot open it: No such file or directory",
                       // "it is a character device, not a regular file", ...
};

// Reads `path` whole when it is a regular file of at most `maxBytes` bytes;
// with `prefix`, a larger one's first `maxBytes` bytes.
FileRead readRegularFile(const std::string &path, uint64_t maxBytes, bool prefix = false);

// Writes `bytes` to a fresh regular file `temporary` (whatever was at that name
// -- a FIFO, a link to /dev/zero, a stale file -- is removed first, never
// opened), then renames it to `path`, so readers never see half a file. Returns
// "" or the problem, naming the path.
std::string writeFileReplacing(const std::string &path, const std::string &temporary,
                               const std::string &bytes);

// "1.5 GiB", "300 bytes": a size in a message.
std::string byteSize(uint64_t bytes);

} // namespace pipert
