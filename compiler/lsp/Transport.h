// The base protocol of the Language Server Protocol: messages framed by a
// `Content-Length` header, read from a stream and written to another. Bad
// framing is reported and skipped; nothing a client sends can make the reader
// allocate more than kMaxMessageBytes or wait for bytes that will never come
// once the stream has ended.
#pragma once

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <string>

namespace pipec::lsp {

// Above the 12 MiB source cap with room for JSON escaping.
constexpr size_t kMaxMessageBytes = size_t(64) << 20;

class Transport {
public:
  Transport(std::FILE *in, llvm::raw_ostream &out) : in_(in), out_(out) {}

  enum class Read {
    Message, // `body` holds one message's content
    End,     // the input ended (between messages or in the middle of one)
    Bad,     // a malformed or oversized message was skipped: `problem` says why
  };
  Read read(std::string &body, std::string &problem);

  void write(const llvm::json::Value &message);

private:
  // One header line without its line end; false at the end of input.
  bool readLine(std::string &line, bool &tooLong);
  // Reads and drops `length` bytes; false at the end of input.
  bool skip(long long length);

  std::FILE *in_;
  llvm::raw_ostream &out_;
};

} // namespace pipec::lsp
