// The point-to-point transport of the CPU backend: one mailbox per channel
// (sender, receiver, kind), as in the compiler's communication model. Sends are
// enqueued in posting order and never block the sender's compute; the receiver
// takes messages in its posting order. Like NCCL, matching is by order only —
// but here a message whose id is not the one expected is caught and reported
// (NCCL would silently hand over the wrong tensor). Waits are bounded by the
// watchdog deadline: instead of hanging, the caller reports what it waited for.
#pragma once

#include "pipert/Tensor.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

namespace pipert {

template <typename T>
class Mailbox {
public:
  void send(uint32_t message, Tensor<T> payload) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back({message, std::move(payload)});
    }
    ready_.notify_all();
  }

  // The next message of the channel, if it arrives before `deadline`.
  // `gotId` is set to the id of the message at the head (to detect mismatches).
  std::optional<Tensor<T>> receive(uint32_t expected, std::chrono::steady_clock::time_point deadline,
                                   uint32_t &gotId) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!ready_.wait_until(lock, deadline, [&] { return !queue_.empty(); }))
      return std::nullopt;
    gotId = queue_.front().message;
    if (gotId != expected)
      return std::nullopt;
    Tensor<T> payload = std::move(queue_.front().payload);
    queue_.pop_front();
    return payload;
  }

private:
  struct Entry {
    uint32_t message;
    Tensor<T> payload;
  };
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Entry> queue_;
};

} // namespace pipert
