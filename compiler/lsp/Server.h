// `pipec lsp`: the Language Server's message loop. Three threads: one reads the
// client's messages into the event queue, one analyses documents, and this loop
// handles the events in order. Requests are answered in order, at once: hover
// and go to definition from the analysis of the document's newest text, or
// null while that analysis is still running (or was released to keep within
// the memory budget; the request asks for it again). Edits only store the text;
// the loop starts an analysis when the queue is empty and none is running, of
// the newest text of the document touched last, so a burst of edits costs one
// analysis, not one each.
#pragma once

#include "lsp/AnalysisWorker.h"
#include "lsp/DocumentStore.h"
#include "lsp/EventQueue.h"
#include "lsp/Transport.h"
#include "support/ResourceLimits.h"

#include "llvm/Support/JSON.h"

#include <memory>

namespace pipec::lsp {

class Server {
public:
  explicit Server(Transport &transport, uint64_t memoryBudget = limits::kLspMemoryBytes)
      : transport_(transport), events_(std::make_shared<EventQueue>()), documents_(memoryBudget) {}

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

  // Starts the reader thread; false when the system refuses it (the loop then
  // reads the input itself, and analyses run on the loop's thread).
  bool startReader();
  // Reads one message from the client into the queue.
  void readOne();
  void handleBody(const std::string &body);
  void analyseNext();
  void analysed(Event &event);

  void handle(const llvm::json::Object &message);
  // A request's result (or sets `error`); a notification's return is ignored.
  llvm::json::Value call(llvm::StringRef method, const llvm::json::Object *params,
                         bool &known, int &errorCode, std::string &error);
  void notify(llvm::StringRef method, const llvm::json::Object *params);

  void publishDiagnostics(const Document &document);
  void publishEmpty(const std::string &uri);
  void replyError(llvm::json::Value id, int code, std::string message);

  llvm::json::Value initialize();
  llvm::json::Value formatting(const OpenDocument &document, int &errorCode, std::string &error);

  Transport &transport_;
  std::shared_ptr<EventQueue> events_;
  std::unique_ptr<AnalysisWorker> worker_;
  bool analysing_ = false; // a job given to the worker whose result has not arrived
  bool readerThread_ = false;
  DocumentStore documents_;
  bool initialized_ = false;
  bool shutdown_ = false;
  bool exit_ = false;
};

} // namespace pipec::lsp
