// Point-to-point transport of the CPU backend, with NCCL's semantics: one channel
// per (sender, receiver, kind) as in the compiler's communication model; the i-th
// send meets the i-th receive, and a send completes only when its receive takes it
// (rendezvous, no buffering). The channel carries message ids: the payload waits
// in the program's per-message slot, which the event chain orders. Unlike NCCL, a
// message whose id is not the one the receiver expects is caught.
//
// One stream posts on each end (single producer, single consumer), so the
// channel is two counters; nothing here blocks. The stream engine parks a worker
// whose stream cannot move and the channel wakes it.
#pragma once

#include "exec/Waker.h"

#include <atomic>
#include <cstdint>

namespace pipert {

class Channel {
public:
  void connect(Waker *sender, Waker *receiver) {
    sender_ = sender;
    receiver_ = receiver;
  }

  // Sender: offers `message`; returns the ticket taken() is asked about. Only
  // after the previous offer was taken.
  uint64_t post(uint32_t message) {
    message_ = message;
    uint64_t ticket = posted_.load(std::memory_order_relaxed) + 1;
    posted_.store(ticket, std::memory_order_release);
    receiver_->wake();
    return ticket;
  }
  bool taken(uint64_t ticket) const { return taken_.load(std::memory_order_acquire) >= ticket; }

  // Receiver: whether an offer waits, which message it is, and taking it.
  bool offered() const {
    return posted_.load(std::memory_order_acquire) > taken_.load(std::memory_order_relaxed);
  }
  uint32_t offeredMessage() const { return message_; }
  void take() {
    taken_.store(taken_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    sender_->wake();
  }

private:
  std::atomic<uint64_t> posted_{0}, taken_{0}; // counts over the whole run
  uint32_t message_ = 0;                       // the offer: written before posted_ moves
  Waker *sender_ = nullptr, *receiver_ = nullptr;
};

} // namespace pipert
