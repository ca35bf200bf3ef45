// The expert-parallel groups shared by the replicas of a pipeline (--ep): one
// group per (rank, chunk) slot, whose members are that slot's stage in every
// replica.
#pragma once

#include "pipert/ThreadedAllToAll.h"

#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace pipert {

template <typename T>
class ExpertGroups {
public:
  ExpertGroups(int size, double timeoutSeconds) : size_(size), timeout_(timeoutSeconds) {}
  std::shared_ptr<AllToAll<T>> endpoint(int rank, int chunk, int replica) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto &group = groups_[{rank, chunk}];
    if (!group)
      group = std::make_unique<ThreadedAllToAllGroup<T>>(size_, timeout_);
    return group->endpoint(replica);
  }

private:
  int size_;
  double timeout_;
  std::mutex mutex_;
  std::map<std::pair<int, int>, std::unique_ptr<ThreadedAllToAllGroup<T>>> groups_;
};

} // namespace pipert
