// A cross-stream edge: one stream records the event once (optionally with the
// tensor it produced), another waits for it. The CPU twin of cudaEvent_t.
#pragma once

#include "pipert/Tensor.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

namespace pipert {

template <typename T>
class Event {
public:
  void record(Tensor<T> value) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      value_ = std::move(value);
      recorded_ = true;
    }
    changed_.notify_all();
  }

  // The recorded tensor, or nullopt if the deadline passed first.
  std::optional<Tensor<T>> wait(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!changed_.wait_until(lock, deadline, [&] { return recorded_; }))
      return std::nullopt;
    recorded_ = false; // one producer, one consumer: ready for the next step
    return std::move(value_);
  }

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool recorded_ = false;
  Tensor<T> value_;
};

} // namespace pipert
