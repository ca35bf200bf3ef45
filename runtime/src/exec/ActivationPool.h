// The activation buffers of one rank: the tensors that flow between stages
// (forward outputs, input gradients, received messages). A buffer no longer
// needed goes back to the pool and is handed out again for the next tensor of
// its shape, so a steady-state step allocates nothing. The pool counts what it
// holds, so a run can report how many buffers a rank really needed.
#pragma once

#include "pipert/Tensor.h"

#include <algorithm>
#include <cstdint>
#include <map>
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

template <typename T>
class ActivationPool {
public:
  // A rows x cols tensor (contents unspecified: callers overwrite it).
  Tensor<T> acquire(size_t rows, size_t cols) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.live;
    stats_.peakLive = std::max(stats_.peakLive, stats_.live);
    auto &free = free_[{rows, cols}];
    if (free.empty()) {
      ++stats_.allocations;
      return Tensor<T>(rows, cols);
    }
    ++stats_.reuses;
    Tensor<T> tensor = std::move(free.back());
    free.pop_back();
    return tensor;
  }

  // Accounts a tensor made elsewhere (a micro-batch's input data) as handed out.
  Tensor<T> adopt(Tensor<T> tensor) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.allocations;
    ++stats_.live;
    stats_.peakLive = std::max(stats_.peakLive, stats_.live);
    return tensor;
  }

  // Gives a buffer back (one acquired here, or one that arrived from another rank).
  void release(Tensor<T> &&tensor) {
    if (tensor.empty())
      return;
    std::lock_guard<std::mutex> lock(mutex_);
    --stats_.live;
    free_[{tensor.rows(), tensor.cols()}].push_back(std::move(tensor));
  }

  PoolStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

private:
  mutable std::mutex mutex_;
  std::map<std::pair<size_t, size_t>, std::vector<Tensor<T>>> free_;
  PoolStats stats_;
};

} // namespace pipert
