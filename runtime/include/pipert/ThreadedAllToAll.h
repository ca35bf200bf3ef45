// An AllToAll group whose participants are threads of one process: the
// expert-parallel group of an MoE stage in the CPU backend (and in the tests).
// Each exchange is a two-phase rendezvous (deposit, then collect); a
// participant that waits longer than the timeout throws instead of hanging.
#pragma once

#include "pipert/AllToAll.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace pipert {

template <typename T>
class ThreadedAllToAllGroup {
public:
  explicit ThreadedAllToAllGroup(int size, double timeoutSeconds = 20)
      : size_(size), timeoutSeconds_(timeoutSeconds), mail_(size, std::vector<TokenBlock<T>>(size)) {}

  // The endpoint of participant `rank`.
  std::shared_ptr<AllToAll<T>> endpoint(int rank);

  std::vector<TokenBlock<T>> exchange(int rank, std::vector<TokenBlock<T>> outgoing) {
    std::unique_lock<std::mutex> lock(mutex_);
    waitFor(lock, [&] { return !collecting_; });
    for (int d = 0; d < size_; ++d)
      mail_[rank][d] = std::move(outgoing[d]);
    if (++deposited_ == size_) {
      collecting_ = true;
      changed_.notify_all();
    }
    waitFor(lock, [&] { return collecting_; });
    std::vector<TokenBlock<T>> incoming(size_);
    for (int s = 0; s < size_; ++s)
      incoming[s] = std::move(mail_[s][rank]);
    if (++collected_ == size_) {
      deposited_ = collected_ = 0;
      collecting_ = false;
      changed_.notify_all();
    }
    return incoming;
  }

private:
  template <typename Pred> void waitFor(std::unique_lock<std::mutex> &lock, Pred ready) {
    if (!changed_.wait_for(lock, std::chrono::duration<double>(timeoutSeconds_), ready))
      throw std::runtime_error("all-to-all: a participant waited " + std::to_string(timeoutSeconds_) +
                               " s for the others");
  }

  int size_;
  double timeoutSeconds_;
  std::vector<std::vector<TokenBlock<T>>> mail_; // [source][destination]
  std::mutex mutex_;
  std::condition_variable changed_;
  int deposited_ = 0, collected_ = 0;
  bool collecting_ = false;
};

template <typename T>
class ThreadedAllToAll final : public AllToAll<T> {
public:
  ThreadedAllToAll(ThreadedAllToAllGroup<T> &group, int rank, int size) : group_(group), rank_(rank), size_(size) {}
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  std::vector<TokenBlock<T>> exchange(std::vector<TokenBlock<T>> outgoing) override {
    if (static_cast<int>(outgoing.size()) != size_)
      throw std::invalid_argument("all-to-all: " + std::to_string(outgoing.size()) + " blocks for " +
                                  std::to_string(size_) + " participants");
    return group_.exchange(rank_, std::move(outgoing));
  }

private:
  ThreadedAllToAllGroup<T> &group_;
  int rank_, size_;
};

template <typename T> std::shared_ptr<AllToAll<T>> ThreadedAllToAllGroup<T>::endpoint(int rank) {
  return std::make_shared<ThreadedAllToAll<T>>(*this, rank, size_);
}

} // namespace pipert
