#include "lsp/Transport.h"

#include "llvm/ADT/StringRef.h"

#include <algorithm>

namespace pipec::lsp {

namespace {
constexpr size_t kMaxHeaderLine = 4096;
constexpr unsigned kMaxHeaders = 64;
} // namespace

bool Transport::readLine(std::string &line, bool &tooLong) {
  line.clear();
  tooLong = false;
  for (int c; (c = std::fgetc(in_)) != EOF;) {
    if (c == '\n') {
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      return true;
    }
    if (line.size() < kMaxHeaderLine)
      line += char(c);
    else
      tooLong = true; // keep reading to the line end, storing nothing more
  }
  return false; // the input ended, perhaps in the middle of a line
}

bool Transport::skip(long long length) {
  char sink[1 << 16];
  for (long long left = length; left > 0;) {
    size_t chunk = size_t(std::min<long long>(left, sizeof sink));
    size_t got = std::fread(sink, 1, chunk, in_);
    if (got == 0)
      return false;
    left -= (long long)got;
  }
  return true;
}

Transport::Read Transport::read(std::string &body, std::string &problem) {
  std::string line;
  bool tooLong = false;
  // Headers: up to an empty line. Blank lines before the first header are noise.
  long long length = -1;
  bool badHeader = false;
  unsigned headers = 0;
  do {
    if (!readLine(line, tooLong))
      return Read::End;
  } while (line.empty());
  do {
    if (tooLong || ++headers > kMaxHeaders) {
      badHeader = true;
      problem = "a header line or the header block is too long";
      continue;
    }
    auto [name, value] = llvm::StringRef(line).split(':');
    if (name.trim().equals_insensitive("Content-Length")) {
      unsigned long long parsed;
      if (value.trim().getAsInteger(10, parsed)) {
        badHeader = true;
        problem = "Content-Length is not a number: '" + value.trim().str() + "'";
      } else {
        length = parsed > (unsigned long long)(1) << 62 ? (1LL << 62) : (long long)parsed;
      }
    } else if (line.find(':') == std::string::npos) {
      badHeader = true;
      problem = "not a header line: '" + line.substr(0, 80) + "'";
    } // other headers (Content-Type) are accepted and ignored
  } while (readLine(line, tooLong) && !line.empty());
  if (std::feof(in_))
    return Read::End;
  if (length < 0) {
    if (!badHeader)
      problem = "a message without a Content-Length header";
    return Read::Bad;
  }
  if (badHeader || size_t(length) > kMaxMessageBytes) {
    // The body is skipped unread, so that the next message is found again.
    if (!skip(length))
      return Read::End;
    if (!badHeader)
      problem = "a message of " + std::to_string(length) + " bytes, over the limit of " +
                std::to_string(kMaxMessageBytes) + "; skipped";
    return Read::Bad;
  }
  body.resize(size_t(length));
  if (length > 0 && std::fread(&body[0], 1, size_t(length), in_) != size_t(length))
    return Read::End;
  return Read::Message;
}

void Transport::write(const llvm::json::Value &message) {
  std::string text;
  llvm::raw_string_ostream json(text);
  json << message;
  json.flush();
  out_ << "Content-Length: " << text.size() << "\r\n\r\n" << text;
  out_.flush();
}

} // namespace pipec::lsp
