// readRegularFile (see pipert/RegularFile.h).
#include "pipert/RegularFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace pipert {

namespace {

const char *kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a file";
}

struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0)
      ::close(fd);
  }
};

} // namespace

std::string byteSize(uint64_t bytes) {
  if (bytes < 1024)
    return std::to_string(bytes) + " bytes";
  const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = double(bytes);
  int unit = -1;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.3g %s", value, units[unit]);
  return text;
}

FileRead readRegularFile(const std::string &path, uint64_t maxBytes, bool prefix) {
  FileRead result;
  Descriptor file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (file.fd < 0) {
    result.missing = errno == ENOENT;
    result.problem = std::string("cannot open the file: ") + std::strerror(errno);
    return result;
  }
  struct stat info;
  if (::fstat(file.fd, &info) != 0) {
    result.problem = std::string("cannot read the file: ") + std::strerror(errno);
    return result;
  }
  if (!S_ISREG(info.st_mode)) {
    result.problem = std::string("it is ") + kindOf(info.st_mode) + ", not a regular file";
    return result;
  }
  uint64_t size = uint64_t(info.st_size);
  if (size > maxBytes && prefix) {
    size = maxBytes;
  } else if (size > maxBytes) {
    result.tooLarge = true;
    result.problem = "it is " + byteSize(size) + ", more than the " + byteSize(maxBytes) +
                     " this program reads";
    return result;
  }
  // Read what fstat promised; a file that grows meanwhile is read no further
  // than the cap, and one that shrinks is read as far as it goes.
  result.bytes.resize(size_t(size));
  size_t done = 0;
  while (done < result.bytes.size()) {
    ssize_t n = ::read(file.fd, &result.bytes[done], result.bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      result.problem = std::string("cannot read the file: ") + std::strerror(errno);
      result.bytes.clear();
      return result;
    }
    if (n == 0)
      break;
    done += size_t(n);
  }
  result.bytes.resize(done);
  result.ok = true;
  return result;
}

std::string writeFileReplacing(const std::string &path, const std::string &temporary,
                               const std::string &bytes) {
  // Whatever lies at `temporary` goes first: a FIFO would block the open (no
  // reader), a link would send the bytes to its target (/dev/zero, another
  // file) and then be renamed into place. unlink removes the name, not what it
  // points to; a directory cannot be unlinked and is reported.
  if (::unlink(temporary.c_str()) != 0 && errno != ENOENT)
    return "cannot replace " + temporary + ": " + std::strerror(errno);
  Descriptor file{::open(temporary.c_str(),
                         O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644)};
  if (file.fd < 0)
    return "cannot create " + temporary + ": " + std::strerror(errno);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(file.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return "cannot write " + temporary + ": " + std::strerror(n < 0 ? errno : EIO);
    done += size_t(n);
  }
  if (::close(file.fd) != 0) {
    file.fd = -1;
    return "cannot write " + temporary + ": " + std::strerror(errno);
  }
  file.fd = -1;
  if (::rename(temporary.c_str(), path.c_str()) != 0)
    return "cannot rename " + temporary + " to " + path + ": " + std::strerror(errno);
  return "";
}

} // namespace pipert
