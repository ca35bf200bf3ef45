// Point-to-point transport of the CPU backend, with NCCL's semantics: one channel
// per (sender, receiver, kind) as in the compiler's communication model; the i-th
// send meets the i-th receive, and a send completes only when its receive takes it
// (rendezvous, no buffering). Unlike NCCL, a message whose id is not the one the
// receiver expects is caught. Every wait is bounded by the watchdog's deadline.
#pragma once

#include "pipert/Tensor.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

namespace pipert {

template <typename T>
class Channel {
public:
  using Deadline = std::chrono::steady_clock::time_point;

  // Called by the sender's send stream: blocks until the receiver takes the
  // message. False if the deadline passed first.
  bool send(uint32_t message, Tensor<T> payload, Deadline deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!changed_.wait_until(lock, deadline, [&] { return !full_; }))
      return false;
    full_ = true;
    message_ = message;
    payload_ = std::move(payload);
    ++sent_;
    uint64_t mine = sent_;
    changed_.notify_all();
    return changed_.wait_until(lock, deadline, [&] { return taken_ >= mine; });
  }

  // Called by the receiver's receive stream: the next message, if it arrives
  // before the deadline and is the one expected (`got` says which one came).
  std::optional<Tensor<T>> receive(uint32_t expected, Deadline deadline, uint32_t &got) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!changed_.wait_until(lock, deadline, [&] { return full_; }))
      return std::nullopt;
    got = message_;
    if (got != expected)
      return std::nullopt;
    Tensor<T> payload = std::move(payload_);
    full_ = false;
    ++taken_;
    changed_.notify_all();
    return payload;
  }

private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool full_ = false;
  uint32_t message_ = 0;
  Tensor<T> payload_;
  uint64_t sent_ = 0, taken_ = 0;
};

} // namespace pipert
