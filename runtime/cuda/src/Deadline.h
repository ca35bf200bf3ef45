// Deadlines for the waits of a CUDA program: every wait the host does (the
// bootstrap, NCCL communicator set-up, channel connection, a step) polls
// against one, so a missing or dead peer ends in an error naming what was
// waited for, never a hang.
#pragma once

#include "pipert/SharedOptions.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace pipert::cuda {

// A wait that did not finish before its deadline (exit status 3).
struct TimeoutError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Deadline {
public:
  using Clock = std::chrono::steady_clock;

  // Clamped as --timeout is: now() plus a longer time overflows the clock.
  explicit Deadline(double seconds)
      : seconds_(std::min(seconds, kMaxTimeoutSeconds)),
        at_(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(seconds_))) {}

  bool passed() const { return Clock::now() >= at_; }
  double secondsLeft() const {
    return std::max(0.0, std::chrono::duration<double>(at_ - Clock::now()).count());
  }
  int millisecondsLeft() const { return int(secondsLeft() * 1000); }
  double seconds() const { return seconds_; } // the whole allowance
  // "timed out after 30 s waiting for WHAT"
  std::string timedOut(const std::string &what) const {
    char text[32];
    std::snprintf(text, sizeof text, "%g", seconds_);
    return std::string("timed out after ") + text + " s waiting for " + what;
  }

private:
  double seconds_;
  Clock::time_point at_;
};

} // namespace pipert::cuda
