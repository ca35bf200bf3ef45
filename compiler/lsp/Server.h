// `pipec lsp`: the Language Server's message loop. Requests are answered in
// order, one at a time; every document is re-analysed on each change (full sync).
#pragma once

#include "lsp/DocumentStore.h"
#include "lsp/Transport.h"

#include "llvm/Support/JSON.h"

namespace pipec::lsp {

class Server {
public:
  explicit Server(Transport &transport) : transport_(transport) {}

  // Serves until `exit` or the end of input. Returns the exit status: 0 after
  // `shutdown` then `exit`, 1 otherwise (as the protocol asks).
  int run();

private:
  // JSON-RPC error codes.
  enum ErrorCode {
    ParseError = -32700,
    InvalidRequest = -32600,
    MethodNotFound = -32601,
    InvalidParams = -32602,
    ServerNotInitialized = -32002,
    RequestFailed = -32803,
  };

  void handle(const llvm::json::Object &message);
  // A request's result (or sets `error`); a notification's return is ignored.
  llvm::json::Value call(llvm::StringRef method, const llvm::json::Object *params,
                         bool &known, int &errorCode, std::string &error);
  void notify(llvm::StringRef method, const llvm::json::Object *params);

  void publishDiagnostics(const Document &document);
  void publishEmpty(const std::string &uri);
  void replyError(llvm::json::Value id, int code, std::string message);

  llvm::json::Value initialize();
  llvm::json::Value formatting(const Document &document, int &errorCode, std::string &error);

  Transport &transport_;
  DocumentStore documents_;
  bool initialized_ = false;
  bool shutdown_ = false;
  bool exit_ = false;
};

} // namespace pipec::lsp
