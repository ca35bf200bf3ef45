#include "lsp/Server.h"

#include "lsp/Features.h"

#include "PipecVersion.h"
#include "formatter/Formatter.h"

#include "llvm/Support/raw_ostream.h"

#include <system_error>
#include <thread>

namespace pipec::lsp {

using llvm::json::Array;
using llvm::json::Object;
using llvm::json::Value;

namespace {

void log(const llvm::Twine &message) { llvm::errs() << "pipec lsp: " << message << "\n"; }

const Object *objectAt(const Object *object, llvm::StringRef key) {
  return object ? object->getObject(key) : nullptr;
}

std::optional<std::string> uriOf(const Object *params) {
  const Object *document = objectAt(params, "textDocument");
  if (!document)
    return std::nullopt;
  if (llvm::Optional<llvm::StringRef> uri = document->getString("uri"))
    return uri->str();
  return std::nullopt;
}

// An LSP Position object.
std::optional<Position> positionIn(const Object *position) {
  if (!position)
    return std::nullopt;
  llvm::Optional<int64_t> line = position->getInteger("line");
  llvm::Optional<int64_t> character = position->getInteger("character");
  if (!line || !character || *line < 0 || *character < 0 || *line > UINT32_MAX ||
      *character > UINT32_MAX)
    return std::nullopt;
  return Position{unsigned(*line), unsigned(*character)};
}

std::optional<Position> positionOf(const Object *params) {
  return positionIn(objectAt(params, "position"));
}

// llvm::json::parse recurses once per nesting level: a client's `[[[[...` must
// not reach the stack's end. Counts brackets outside strings.
constexpr int kMaxJsonNesting = 512;
bool nestedTooDeep(llvm::StringRef body) {
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonNesting)
        return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

} // namespace

bool Server::startReader() {
  try {
    std::thread([events = events_, &transport = transport_] {
      for (;;) {
        Event event;
        std::string problem;
        Transport::Read read = transport.read(event.text, problem);
        event.kind = read == Transport::Read::Message ? Event::Kind::Message
                     : read == Transport::Read::Bad   ? Event::Kind::Bad
                                                      : Event::Kind::End;
        if (read == Transport::Read::Bad)
          event.text = problem;
        events->push(std::move(event));
        if (read == Transport::Read::End)
          return;
      }
    }).detach();
    return true;
  } catch (const std::system_error &) {
    log("no thread for reading; messages are read between analyses");
    return false;
  }
}

void Server::readOne() {
  Event event;
  std::string problem;
  Transport::Read read = transport_.read(event.text, problem);
  event.kind = read == Transport::Read::Message ? Event::Kind::Message
               : read == Transport::Read::Bad   ? Event::Kind::Bad
                                                : Event::Kind::End;
  if (read == Transport::Read::Bad)
    event.text = problem;
  events_->push(std::move(event));
}

int Server::run() {
  readerThread_ = startReader();
  worker_ = std::make_unique<AnalysisWorker>(events_, readerThread_);
  while (!exit_) {
    if (events_->empty())
      analyseNext(); // nothing queued: the edits so far are all in
    if (!readerThread_ && events_->empty())
      readOne();
    Event event = events_->pop();
    switch (event.kind) {
    case Event::Kind::End: // a client that shut the server down may just close
      if (!shutdown_)
        log("the input ended without 'shutdown' and 'exit'");
      return shutdown_ ? 0 : 1;
    case Event::Kind::Bad:
      log(event.text);
      continue;
    case Event::Kind::Analysed:
      analysed(event);
      continue;
    case Event::Kind::Message:
      handleBody(event.text);
      continue;
    }
  }
  return shutdown_ ? 0 : 1;
}

void Server::analyseNext() {
  if (analysing_)
    return;
  OpenDocument *next = documents_.nextToAnalyse();
  if (!next)
    return;
  // Room for the new analysis beside those kept (its old one included, which
  // answers nothing once the text changed, but is freed only when the new one
  // arrives): estimated as the old one, or from the text alone.
  documents_.makeRoomFor(
      *next, std::max(next->bytes(), kBytesPerSourceByte * uint64_t(next->text.size())));
  next->wanted = false;
  analysing_ = true;
  worker_->start(AnalysisJob{next->uri, next->path, next->version, next->edit, next->text});
}

void Server::analysed(Event &event) {
  analysing_ = false;
  OpenDocument *document = documents_.install(std::move(event.analysis), event.edit);
  if (!document)
    return; // closed or changed since: the newest text is analysed next
  if (document->tooLarge) {
    auto size = [](uint64_t bytes) {
      return bytes >= (uint64_t(1) << 20) ? std::to_string(bytes >> 20) + " MiB"
             : bytes >= 1024              ? std::to_string(bytes >> 10) + " KiB"
                                          : std::to_string(bytes) + " bytes";
    };
    document->analysis->compilation->diags().warn(DiagKind::LspMemoryBudget, llvm::SMRange(),
                                                  size(document->bytes()),
                                                  size(documents_.budget()));
    publishDiagnostics(*document->analysis);
    document->analysis.reset();
    return;
  }
  publishDiagnostics(*document->analysis);
}

void Server::handleBody(const std::string &body) {
  if (nestedTooDeep(body)) {
    log("a message nested more than " + llvm::Twine(kMaxJsonNesting) + " deep; skipped");
    replyError(nullptr, InvalidRequest, "the message is nested too deep");
    return;
  }
  llvm::Expected<Value> message = llvm::json::parse(body);
  if (!message) {
    std::string error = llvm::toString(message.takeError());
    log("a message that is not JSON: " + error);
    replyError(nullptr, ParseError, "not JSON: " + error);
    return;
  }
  if (const Object *object = message->getAsObject()) {
    handle(*object);
  } else {
    log("a message that is not a JSON object");
    replyError(nullptr, InvalidRequest, "a message must be a JSON object");
  }
}

void Server::handle(const Object &message) {
  llvm::Optional<llvm::StringRef> method = message.getString("method");
  const Value *id = message.get("id");
  if (!method) {
    if (id && (message.get("result") || message.get("error")))
      return; // a response: the server sends no requests, so nothing waits for it
    replyError(id ? *id : Value(nullptr), InvalidRequest, "a message without a method");
    return;
  }
  const Object *params = message.getObject("params");
  if (!id) {
    notify(*method, params);
    return;
  }
  if (!initialized_ && *method != "initialize") {
    replyError(*id, ServerNotInitialized, "the first request must be 'initialize'");
    return;
  }
  if (shutdown_) {
    replyError(*id, InvalidRequest, "the server is shut down; only 'exit' is accepted");
    return;
  }
  bool known = true;
  int errorCode = 0;
  std::string error;
  Value result = call(*method, params, known, errorCode, error);
  if (!known)
    replyError(*id, MethodNotFound, "unknown method '" + method->str() + "'");
  else if (errorCode != 0)
    replyError(*id, errorCode, error);
  else
    transport_.write(Object{{"jsonrpc", "2.0"}, {"id", *id}, {"result", std::move(result)}});
}

Value Server::call(llvm::StringRef method, const Object *params, bool &known, int &errorCode,
                   std::string &error) {
  if (method == "initialize") {
    initialized_ = true;
    return initialize();
  }
  if (method == "shutdown") {
    shutdown_ = true;
    return nullptr;
  }
  if (method != "textDocument/hover" && method != "textDocument/definition" &&
      method != "textDocument/formatting") {
    known = false;
    return nullptr;
  }
  std::optional<std::string> uri = uriOf(params);
  OpenDocument *open = uri ? documents_.find(*uri) : nullptr;
  if (!open) {
    errorCode = InvalidParams;
    error = uri ? "the document '" + *uri + "' is not open" : "no textDocument.uri";
    return nullptr;
  }
  if (method == "textDocument/formatting")
    return formatting(*open, errorCode, error);
  std::optional<Position> position = positionOf(params);
  if (!position) {
    errorCode = InvalidParams;
    error = "no valid position";
    return nullptr;
  }
  documents_.touch(*open);
  // Answered at once: nothing to show while the newest text is being analysed
  // (or after its analysis was released; touch asked for it again).
  const Document *document = open->current();
  if (!document)
    return nullptr;
  size_t offset = document->lines->offsetOf(*position);
  return method == "textDocument/hover" ? hoverAt(*document, offset)
                                        : definitionAt(*document, offset);
}

void Server::notify(llvm::StringRef method, const Object *params) {
  if (method == "exit") {
    exit_ = true;
    return;
  }
  if (!initialized_ || shutdown_)
    return; // notifications before initialize or after shutdown are dropped
  std::optional<std::string> uri = uriOf(params);
  const Object *document = objectAt(params, "textDocument");
  if (method == "textDocument/didOpen" && uri) {
    llvm::Optional<llvm::StringRef> text = document->getString("text");
    if (!text) {
      log("didOpen without text for " + *uri);
      return;
    }
    documents_.open(*uri, document->getInteger("version").getValueOr(0), text->str());
  } else if (method == "textDocument/didChange" && uri) {
    OpenDocument *open = documents_.find(*uri);
    const Array *changes = params->getArray("contentChanges");
    if (!open || !changes) {
      log("didChange for a document that is not open, or without changes: " + *uri);
      return;
    }
    std::string text = open->text;
    for (const Value &change : *changes) {
      const Object *edit = change.getAsObject();
      llvm::Optional<llvm::StringRef> replacement = edit ? edit->getString("text") : llvm::None;
      if (!replacement) {
        log("a content change without text in " + *uri);
        return;
      }
      const Object *range = edit->getObject("range");
      if (!range) { // the whole document
        text = replacement->str();
        continue;
      }
      // An incremental change (the server asks for full ones, but accepts these).
      LineIndex lines(text);
      std::optional<Position> a = positionIn(range->getObject("start"));
      std::optional<Position> b = positionIn(range->getObject("end"));
      if (!a || !b) {
        log("a content change with a bad range in " + *uri);
        return;
      }
      size_t first = lines.offsetOf(*a), last = std::max(first, lines.offsetOf(*b));
      text = text.substr(0, first) + replacement->str() + text.substr(last);
    }
    documents_.change(*open, document->getInteger("version").getValueOr(0), std::move(text));
  } else if (method == "textDocument/didClose" && uri) {
    documents_.close(*uri);
    publishEmpty(*uri);
  }
  // initialized, $/cancelRequest, $/setTrace, workspace/*: nothing to do
}

void Server::publishDiagnostics(const Document &document) {
  transport_.write(Object{
      {"jsonrpc", "2.0"},
      {"method", "textDocument/publishDiagnostics"},
      {"params", Object{{"uri", document.uri},
                        {"version", document.version},
                        {"diagnostics", diagnosticsOf(document)}}}});
}

void Server::publishEmpty(const std::string &uri) {
  transport_.write(Object{{"jsonrpc", "2.0"},
                          {"method", "textDocument/publishDiagnostics"},
                          {"params", Object{{"uri", uri}, {"diagnostics", Array()}}}});
}

void Server::replyError(Value id, int code, std::string message) {
  transport_.write(Object{{"jsonrpc", "2.0"},
                          {"id", std::move(id)},
                          {"error", Object{{"code", code}, {"message", std::move(message)}}}});
}

Value Server::initialize() {
  return Object{
      {"capabilities",
       Object{{"textDocumentSync", Object{{"openClose", true}, {"change", 1}}},
              {"hoverProvider", true},
              {"definitionProvider", true},
              {"documentFormattingProvider", true}}},
      {"serverInfo", Object{{"name", "pipec"}, {"version", PIPEC_VERSION}}}};
}

// Formats the newest text, whether or not its analysis has arrived.
Value Server::formatting(const OpenDocument &document, int &errorCode, std::string &error) {
  formatter::FormatResult result = formatter::formatSource(document.path, document.text);
  if (result.status == formatter::FormatResult::Rejected) {
    errorCode = RequestFailed;
    error = "the document has syntax errors; it is formatted once they are fixed";
    return nullptr;
  }
  if (result.status == formatter::FormatResult::Unsafe) {
    errorCode = RequestFailed;
    error = "formatter bug: " + result.problem + "; the document was left unchanged";
    return nullptr;
  }
  if (result.text == document.text)
    return Array();
  Position end = LineIndex(document.text).positionOf(document.text.size());
  Object range{{"start", Object{{"line", 0}, {"character", 0}}},
               {"end", Object{{"line", end.line}, {"character", end.character}}}};
  return Array{Object{{"range", std::move(range)}, {"newText", std::move(result.text)}}};
}

} // namespace pipec::lsp
