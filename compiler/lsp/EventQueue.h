// What the language server's main loop waits on: messages from the client (read
// by a thread of their own, so that reading never waits for an analysis) and
// finished analyses (from the analysis thread), in the order they happened.
// The main loop handles every event already queued before it starts another
// analysis, which is what coalesces a burst of edits into one analysis of the
// newest text.
#pragma once

#include "lsp/DocumentStore.h"

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

namespace pipec::lsp {

struct Event {
  enum class Kind {
    Message,  // `text`: one message's content
    Bad,      // `text`: why a malformed message was skipped
    End,      // the input ended
    Analysed, // `analysis`: a document analysed, of edit `edit`
  } kind = Kind::End;
  std::string text;
  std::unique_ptr<Document> analysis;
  uint64_t edit = 0;
};

class EventQueue {
public:
  void push(Event event) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      events_.push_back(std::move(event));
    }
    ready_.notify_one();
  }
  // The next event, waiting for one.
  Event pop() {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return !events_.empty(); });
    Event event = std::move(events_.front());
    events_.pop_front();
    return event;
  }
  bool empty() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_.empty();
  }

private:
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Event> events_;
};

} // namespace pipec::lsp
