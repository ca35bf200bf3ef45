// The watchdog of a program's start-up (runProgram): from the options to the
// first step, the main thread builds the model, reads --data and --load's
// checkpoint and starts the workers. Every file is opened so that it cannot
// block (pipert/RegularFile.h), but a call into a stage provider or a file
// system that hangs cannot be unwound from another thread. So this watchdog,
// armed by the program's top for start-up only, is the one place that ends
// the process itself: it names the phase, flushes both streams and exits with
// the watchdog's status (kExitTimeout), as the step watchdog's failure would.
#pragma once

#include "exec/Watchdog.h"

#include "pipert/ExitStatus.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace pipert {

class StartupWatchdog {
public:
  explicit StartupWatchdog(double timeoutSeconds)
      : watchdog_(timeoutSeconds), thread_([this] { watch(); }) {}
  ~StartupWatchdog() { disarm(); }
  StartupWatchdog(const StartupWatchdog &) = delete;
  StartupWatchdog &operator=(const StartupWatchdog &) = delete;

  // What start-up is doing now (a literal): the phase the report names. Each
  // phase has the whole timeout.
  void phase(const char *what) {
    std::lock_guard<std::mutex> lock(mutex_);
    phase_ = what;
    since_ = std::chrono::steady_clock::now();
  }

  // Start-up is over (the first step begins, or the run failed early).
  void disarm() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (done_)
        return;
      done_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!done_) {
      auto deadline = since_ + watchdog_.timeout();
      if (changed_.wait_until(lock, deadline, [&] { return done_; }))
        return;
      if (std::chrono::steady_clock::now() >= since_ + watchdog_.timeout()) {
        std::fflush(stdout);
        std::fprintf(stderr, "pipert: %s\n",
                     watchdog_.failure(std::string("start-up is stuck ") + phase_).what());
        std::fflush(stderr);
        std::_Exit(kExitTimeout);
      }
    }
  }

  Watchdog watchdog_;
  std::mutex mutex_;
  std::condition_variable changed_;
  const char *phase_ = "parsing the options";
  std::chrono::steady_clock::time_point since_ = std::chrono::steady_clock::now();
  bool done_ = false;
  std::thread thread_; // last: it starts once the rest is ready
};

} // namespace pipert
