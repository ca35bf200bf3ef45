// Never hang silently: a wait that makes no progress for the watchdog's timeout,
// or a stage that does not return from a Run for as long, ends the run with a
// message naming the rank, the op and what it waited for. Nothing here ends
// the process: the failure is a RunFailure that the stream engine hands to
// the thread waiting for the step (StreamEngine::wait), which throws it up to
// the program's top (runProgram), where the trace is written, the cause
// printed and the exit status (pipert/ExitStatus.h) returned.
#pragma once

#include "pipert/ExitStatus.h"
#include "pipert/SharedOptions.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace pipert {

// A run that cannot go on: what() is the message after "pipert: ", status()
// the exit status it ends the program with.
class RunFailure : public std::runtime_error {
public:
  RunFailure(int status, const std::string &message)
      : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

private:
  int status_;
};

class Watchdog {
public:
  // Clamped as --timeout is: now() + a longer timeout overflows the clock.
  explicit Watchdog(double timeoutSeconds)
      : seconds_(std::min(timeoutSeconds, kMaxTimeoutSeconds)) {
    timeout_ = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(seconds_));
  }

  std::chrono::steady_clock::duration timeout() const { return timeout_; }

  // How often the thread waiting for a step looks at the workers' heartbeats:
  // often enough that a stuck stage is named within an eighth of the timeout.
  std::chrono::steady_clock::duration tick() const {
    return std::clamp<std::chrono::steady_clock::duration>(timeout_ / 8, std::chrono::milliseconds(1),
                                                           std::chrono::milliseconds(100));
  }

  RunFailure failure(const std::string &what) const {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", seconds_);
    return RunFailure(kExitTimeout, "watchdog: " + what + "; no progress for " + seconds +
                                        " s, aborting");
  }

private:
  double seconds_;
  std::chrono::steady_clock::duration timeout_;
};

// An error inside a rank's work (a broken invariant in a stage): the whole run
// stops, since the other ranks would otherwise wait for it.
inline RunFailure rankFailure(int rank, const std::string &what) {
  return RunFailure(kExitDeviceError, "rank " + std::to_string(rank) + " failed: " + what);
}

// A rank that runs out of memory inside a step (the estimate passed: a raised
// --max-memory, a user's stages): a usage error naming the options that size the
// buffers, not a bare std::bad_alloc from a worker thread.
inline RunFailure rankOutOfMemory(int rank) {
  return RunFailure(kExitUsage, "rank " + std::to_string(rank) +
                                    " ran out of memory during a step; lower --hidden, --seq or "
                                    "--micro-batch-size (or --max-memory, so the estimate refuses "
                                    "them before the run)");
}

} // namespace pipert
