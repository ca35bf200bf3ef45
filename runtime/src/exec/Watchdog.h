// Never hang silently: a wait that makes no progress for the watchdog's timeout
// ends the program with a message naming the rank, the op and what it waited for.
#pragma once

#include "pipert/SharedOptions.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace pipert {

constexpr int kWatchdogExit = 3;
constexpr int kRankErrorExit = 4;

class Watchdog {
public:
  // Clamped as --timeout is: now() + a longer timeout overflows the clock.
  explicit Watchdog(double timeoutSeconds)
      : seconds_(std::min(timeoutSeconds, kMaxTimeoutSeconds)) {
    timeout_ = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(seconds_));
  }

  std::chrono::steady_clock::time_point deadline() const {
    return std::chrono::steady_clock::now() + timeout_;
  }

  std::chrono::steady_clock::duration timeout() const { return timeout_; }

  [[noreturn]] void fire(const std::string &what) const {
    std::fprintf(stderr, "pipert: watchdog: %s; no progress for %g s, aborting\n", what.c_str(),
                 seconds_);
    std::fflush(stderr);
    std::_Exit(kWatchdogExit);
  }

private:
  double seconds_;
  std::chrono::steady_clock::duration timeout_;
};

// An error inside a rank's work (a broken invariant in a stage): report and stop
// the whole program, since the other ranks would otherwise wait for it.
[[noreturn]] inline void rankFailed(int rank, const std::string &what) {
  std::fprintf(stderr, "pipert: rank %d failed: %s\n", rank, what.c_str());
  std::fflush(stderr);
  std::_Exit(kRankErrorExit);
}

} // namespace pipert
