// The activation buffers of one rank: the tensors that flow between stages
// (forward outputs, input gradients, received messages). A buffer no longer
// needed goes back to the pool of the rank that let it go (a received
// message's buffer to the receiver's, which hands it out again for its own
// outputs) and is handed out again for the next tensor of its shape, so a
// steady-state step allocates nothing. Each rank's pool has its own lock:
// ranks never wait for each other's allocations, and a rank's streams (stream
// threads) rarely meet on it.
//
// The pools of a pipeline count together (PoolCounter): how many buffers were
// made and reused, and how many were in use at once over all ranks, so a run
// can report how many buffers it really needed.
#pragma once

#include "pipert/Tensor.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace pipert {

struct PoolStats {
  int64_t allocations = 0; // buffers created
  int64_t reuses = 0;      // buffers handed out again
  int64_t live = 0;        // handed out and not returned
  int64_t peakLive = 0;
};

// The live count of a pipeline's pools: a buffer may be handed out by one
// rank's pool and given back to another's.
class PoolCounter {
public:
  void handedOut() {
    int64_t now = live_.fetch_add(1, std::memory_order_relaxed) + 1;
    int64_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  void returned() { live_.fetch_sub(1, std::memory_order_relaxed); }
  int64_t live() const { return live_.load(); }
  int64_t peak() const { return peak_.load(); }

private:
  std::atomic<int64_t> live_{0}, peak_{0};
};

template <typename T>
class ActivationPool {
public:
  explicit ActivationPool(PoolCounter &counter) : counter_(counter) {}

  // A rows x cols tensor (contents unspecified: callers overwrite it).
  Tensor<T> acquire(size_t rows, size_t cols) {
    counter_.handedOut();
    std::lock_guard<std::mutex> lock(mutex_);
    auto &free = free_[{rows, cols}];
    if (free.empty()) {
      ++allocations_;
      return Tensor<T>(rows, cols);
    }
    ++reuses_;
    Tensor<T> tensor = std::move(free.back());
    free.pop_back();
    return tensor;
  }

  // Accounts a tensor made elsewhere (a micro-batch's input data) as handed out.
  Tensor<T> adopt(Tensor<T> tensor) {
    counter_.handedOut();
    std::lock_guard<std::mutex> lock(mutex_);
    ++allocations_;
    return tensor;
  }

  // Gives a buffer back (one acquired here, or one that arrived from another rank).
  void release(Tensor<T> &&tensor) {
    if (tensor.empty())
      return;
    counter_.returned();
    std::lock_guard<std::mutex> lock(mutex_);
    free_[{tensor.rows(), tensor.cols()}].push_back(std::move(tensor));
  }

  // This pool's allocations and reuses (live and peak: the counter's).
  PoolStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return {allocations_, reuses_, 0, 0};
  }

private:
  PoolCounter &counter_;
  mutable std::mutex mutex_;
  std::map<std::pair<size_t, size_t>, std::vector<Tensor<T>>> free_;
  int64_t allocations_ = 0, reuses_ = 0;
};

// The pools of every rank of a pipeline, counted together.
template <typename T>
class RankPools {
public:
  explicit RankPools(int ranks) {
    for (int r = 0; r < ranks; ++r)
      pools_.push_back(std::make_unique<ActivationPool<T>>(counter_));
  }
  ActivationPool<T> &operator[](int rank) { return *pools_[size_t(rank)]; }
  PoolStats stats() const {
    PoolStats total;
    for (const auto &pool : pools_) {
      PoolStats s = pool->stats();
      total.allocations += s.allocations;
      total.reuses += s.reuses;
    }
    total.live = counter_.live();
    total.peakLive = counter_.peak();
    return total;
  }

private:
  PoolCounter counter_;
  std::vector<std::unique_ptr<ActivationPool<T>>> pools_;
};

} // namespace pipert
