// The watchdog of a program's start-up (runProgram): from the options to the
// first step, start-up builds the model, reads --data and --load's checkpoint
// and starts the workers. Every file is opened so that it cannot block
// (pipert/RegularFile.h), but a call into a stage provider or a file system
// that hangs cannot be unwound from another thread. So start-up runs on a
// thread of its own while the program's top waits for it with a deadline per
// phase: a phase that makes no progress for --timeout becomes the watchdog's
// RunFailure, thrown at the top as a stuck step's is, which names the phase,
// flushes the output and exits with the watchdog's status (kExitTimeout). A
// stuck start-up thread is left behind, as a worker stuck in a stage is;
// nothing here ends the process. One that finished is joined.
#pragma once

#include "exec/Watchdog.h"

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

namespace pipert {

namespace startup_detail {

// Shared by the start-up thread and the top that waits for it, so that a
// thread left behind never touches what the top has destroyed.
struct StartupState {
  std::mutex mutex;
  std::condition_variable changed;
  const char *phase = "starting";
  std::chrono::steady_clock::time_point since = std::chrono::steady_clock::now();
  bool done = false;
  std::exception_ptr error;
};

} // namespace startup_detail

// What start-up is doing now (a literal): the phase a failure names. Each
// phase has the whole timeout.
class StartupPhase {
public:
  explicit StartupPhase(std::shared_ptr<startup_detail::StartupState> state)
      : state_(std::move(state)) {}
  void operator()(const char *what) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->phase = what;
    state_->since = std::chrono::steady_clock::now();
  }

private:
  std::shared_ptr<startup_detail::StartupState> state_;
};

// Runs `work(phase)` on a start-up thread and returns what it returns;
// rethrows what it throws; throws the watchdog's RunFailure when a phase
// makes no progress for `timeoutSeconds`.
template <typename Result, typename Work>
Result runStartup(double timeoutSeconds, Work work) {
  struct State : startup_detail::StartupState {
    std::optional<Result> result;
  };
  auto state = std::make_shared<State>();
  std::thread worker([state, work = std::move(work)]() mutable {
    std::optional<Result> result;
    std::exception_ptr error;
    try {
      StartupPhase phase(state);
      result.emplace(work(phase));
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      state->result = std::move(result);
      state->error = error;
      state->done = true;
    }
    state->changed.notify_all();
  });
  // A start-up that finished is joined, so that everything its thread did,
  // down to dropping its share of `state`, happens before the result is used
  // (and `state` is never torn down on that thread while this one reads it);
  // one that is stuck is left behind.
  struct DetachUnlessJoined {
    std::thread &thread;
    ~DetachUnlessJoined() {
      if (thread.joinable())
        thread.detach();
    }
  } leaveIfStuck{worker};

  Watchdog watchdog(timeoutSeconds);
  std::unique_lock<std::mutex> lock(state->mutex);
  while (!state->done) {
    auto deadline = state->since + watchdog.timeout(); // a new phase moves it
    if (state->changed.wait_until(lock, deadline, [&] { return state->done; }))
      break;
    if (std::chrono::steady_clock::now() >= state->since + watchdog.timeout())
      throw watchdog.failure(std::string("start-up is stuck ") + state->phase);
  }
  lock.unlock();
  worker.join();
  if (state->error)
    std::rethrow_exception(state->error);
  return std::move(*state->result);
}

} // namespace pipert
