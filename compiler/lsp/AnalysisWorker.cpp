#include "lsp/AnalysisWorker.h"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

namespace pipec::lsp {

// What the thread and the server share; the thread keeps it alive past the
// server (it may still be in an elaboration when the server exits).
struct AnalysisWorker::Shared {
  std::shared_ptr<EventQueue> events;
  std::mutex mutex;
  std::condition_variable wake;
  std::optional<AnalysisJob> job;
  bool quit = false;

  void analyse(AnalysisJob job) {
    Event done;
    done.kind = Event::Kind::Analysed;
    done.edit = job.edit;
    done.analysis = analyseDocument(job.uri, job.path, job.version, std::move(job.text));
    events->push(std::move(done));
  }

  void loop() {
    for (;;) {
      AnalysisJob next;
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return job.has_value() || quit; });
        if (quit)
          return;
        next = std::move(*job);
        job.reset();
      }
      analyse(std::move(next));
    }
  }
};

AnalysisWorker::AnalysisWorker(std::shared_ptr<EventQueue> events, bool useThread)
    : shared_(std::make_shared<Shared>()) {
  shared_->events = std::move(events);
  if (!useThread)
    return;
  try {
    std::thread([shared = shared_] { shared->loop(); }).detach();
    threaded_ = true;
  } catch (const std::system_error &) {
    threaded_ = false; // analyses run in start() on the caller's thread
  }
}

AnalysisWorker::~AnalysisWorker() {
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->quit = true;
  }
  shared_->wake.notify_one();
}

void AnalysisWorker::start(AnalysisJob job) {
  if (!threaded_) {
    shared_->analyse(std::move(job));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->job = std::move(job);
  }
  shared_->wake.notify_one();
}

} // namespace pipec::lsp
