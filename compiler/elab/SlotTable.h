// Per-(rank, chunk) bookkeeping used while running rank programs: which stage and
// flows a slot serves, the next micro-batch for F and for B/I, and the queue of
// I's whose W is still owed.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace pipec {

// The slot's micro-batches, in ascending order, are numbered 0..count-1
// ("positions"). Implicit ops take the lowest position not taken yet.
class MicrobatchCursor {
public:
  std::optional<size_t> takeNext(size_t count) {
    if (!taken_.empty())
      while (next_ < count && taken_[next_])
        ++next_;
    if (next_ >= count)
      return std::nullopt;
    if (!taken_.empty())
      taken_[next_] = true;
    return next_++;
  }
  // An explicit `mb =`. Taking a position twice is allowed here: the coverage
  // check reports the duplicate with both locations.
  void take(size_t position, size_t count) {
    if (taken_.empty()) {
      taken_.assign(count, false);
      for (size_t i = 0; i < next_; ++i)
        taken_[i] = true;
    }
    taken_[position] = true;
  }

private:
  size_t next_ = 0;
  std::vector<bool> taken_; // allocated on the first explicit pick
};

struct SlotUse {
  uint32_t flow;
  int32_t stage;
  int64_t begin, end; // the flow's micro-batches
};

struct DeferredI {
  int32_t microbatch;
  uint32_t flow;
  int32_t stage;
  uint64_t sequence; // rank-wide order of the I's, for first-in-first-out W
};

struct SlotState {
  std::vector<SlotUse> uses; // sorted by begin; empty: the chunk holds no stage
  size_t count = 0;          // micro-batches over all uses
  MicrobatchCursor forward, backward;
  std::deque<DeferredI> deferred;

  int64_t positionOf(int64_t microbatch) const {
    int64_t offset = 0;
    for (const SlotUse &use : uses) {
      if (microbatch >= use.begin && microbatch < use.end)
        return offset + (microbatch - use.begin);
      offset += use.end - use.begin;
    }
    return -1;
  }
  const SlotUse &useAt(size_t position, int64_t &microbatch) const {
    for (const SlotUse &use : uses) {
      size_t size = static_cast<size_t>(use.end - use.begin);
      if (position < size) {
        microbatch = use.begin + static_cast<int64_t>(position);
        return use;
      }
      position -= size;
    }
    return uses.back(); // unreachable for position < count
  }
};

using SlotTable = std::vector<std::vector<SlotState>>; // [rank][chunk]

} // namespace pipec
