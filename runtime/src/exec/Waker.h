// Where a worker of the stream engine parks when none of its streams can move,
// and how the thread that unblocks one of them gets it going again. A wake is a
// counter bump; a parked worker is notified only when it really sleeps, so a
// hand-off to a worker that is still spinning costs no system call.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace pipert {

class Waker {
public:
  using Deadline = std::chrono::steady_clock::time_point;

  // Read before looking at the streams; a wake after it moves it on.
  uint64_t epoch() const { return epoch_.load(); }

  void wake() {
    epoch_.fetch_add(1);
    if (sleeping_.load()) {
      std::lock_guard<std::mutex> lock(mutex_);
      changed_.notify_one();
    }
  }

  // Waits until a wake after `seen`, or the deadline (false). Spins first: the
  // producer a pipeline waits on is usually microseconds away, and a hand-off
  // to a spinning worker needs no system call. How long adapts: a spin that
  // catches the wake doubles the next, one that ends in parking halves it. A
  // spin that finds itself descheduled stops spinning for a while: the machine
  // is oversubscribed, and a parked worker is woken sooner than a spinning one
  // gets the core back.
  bool waitPast(uint64_t seen, Deadline deadline) {
    if (spinMicros_ > 0 && spin(seen))
      return true;
    if (spinMicros_ == 0 && ++parkedWithoutSpin_ >= kProbeAfter) {
      parkedWithoutSpin_ = 0;
      spinMicros_ = kMinSpinMicros; // try spinning again
    }
    std::unique_lock<std::mutex> lock(mutex_);
    sleeping_.store(true);
    bool woken = changed_.wait_until(lock, deadline, [&] { return epoch_.load() != seen; });
    sleeping_.store(false);
    return woken;
  }

private:
  using Clock = std::chrono::steady_clock;
  static constexpr int kMinSpinMicros = 2, kMaxSpinMicros = 50, kProbeAfter = 256;
  static constexpr Clock::duration kDescheduled = std::chrono::microseconds(200);

  bool spin(uint64_t seen) {
    Clock::time_point last = Clock::now(), until = last + std::chrono::microseconds(spinMicros_);
    for (int k = 1;; ++k) {
      if (epoch_.load(std::memory_order_acquire) != seen) {
        spinMicros_ = std::min(spinMicros_ * 2, kMaxSpinMicros);
        return true;
      }
      if (k % 64 != 0) {
        pause();
        continue;
      }
      Clock::time_point now = Clock::now();
      if (now - last > kDescheduled) {
        spinMicros_ = 0;
        return false;
      }
      if (now >= until) {
        spinMicros_ = std::max(spinMicros_ / 2, kMinSpinMicros);
        return false;
      }
      last = now;
      std::this_thread::yield(); // another worker may share this core
    }
  }

  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }

  std::atomic<uint64_t> epoch_{0};
  int spinMicros_ = kMaxSpinMicros; // the waiting worker's own
  int parkedWithoutSpin_ = 0;
  std::atomic<bool> sleeping_{false};
  std::mutex mutex_;
  std::condition_variable changed_;
};

} // namespace pipert
