// The language server's analysis thread: analyses one document text at a time
// (as `pipec check` would) off the main loop, so that requests are answered
// while an analysis runs, and posts each result to the event queue. The main
// loop gives it a job only when it is idle, and always the newest text of a
// document, so queued edits are never analysed one by one. Where the system
// refuses a thread, analyses run on the caller's thread instead (slower to
// answer, never an abort).
#pragma once

#include "lsp/EventQueue.h"

#include <memory>
#include <string>

namespace pipec::lsp {

struct AnalysisJob {
  std::string uri, path;
  int64_t version = 0;
  uint64_t edit = 0;
  std::string text;
};

class AnalysisWorker {
public:
  // `useThread` false: every analysis runs in start(), on the caller's thread.
  AnalysisWorker(std::shared_ptr<EventQueue> events, bool useThread);
  // The thread is left to finish its analysis on its own: nothing waits for it.
  ~AnalysisWorker();

  // Starts `job` (only when the last one's result has arrived); its result
  // arrives as an Analysed event.
  void start(AnalysisJob job);

private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
  bool threaded_ = false;
};

} // namespace pipec::lsp
