// Per-(rank, chunk) bookkeeping used while running rank programs: which stage and
// flows a slot serves, the next micro-batch for F and for B/I, and the queue of
// I's whose W is still owed.
//
// Only slots that hold a stage exist: a rank's chunk numbers may be sparse (stage
// s on rank s, chunk s), so memory follows the number of placed stages, never
// ranks x highest chunk.
#pragma once

#include <algorithm>
#include <cstdint>
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
  // The position takeNext would return, without taking it (greedy scheduling).
  std::optional<size_t> peekNext(size_t count) const {
    size_t next = next_;
    if (!taken_.empty())
      while (next < count && taken_[next])
        ++next;
    if (next >= count)
      return std::nullopt;
    return next;
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

// First-in-first-out, with removal anywhere (W(mb = ...)). A vector and a head
// index: an empty queue allocates nothing, unlike std::deque.
class DeferredQueue {
public:
  using iterator = std::vector<DeferredI>::iterator;
  iterator begin() { return items_.begin() + head_; }
  iterator end() { return items_.end(); }
  void push_back(const DeferredI &item) { items_.push_back(item); }
  size_t size() const { return items_.size() - head_; }
  void erase(iterator it) {
    if (it == begin()) {
      ++head_;
      if (head_ == items_.size() || head_ > 64 && head_ * 2 > items_.size()) {
        items_.erase(items_.begin(), items_.begin() + head_);
        head_ = 0;
      }
      return;
    }
    items_.erase(it);
  }

private:
  std::vector<DeferredI> items_;
  size_t head_ = 0; // items before it were taken from the front
};

struct SlotState {
  int32_t chunk = 0;
  std::vector<SlotUse> uses; // sorted by begin
  size_t count = 0;          // micro-batches over all uses
  MicrobatchCursor forward, backward;
  MicrobatchCursor recompute; // R: replays forwards in the order F ran them, by default
  DeferredQueue deferred;
  int64_t forwardsRun = 0, backwardsRun = 0; // F's and B/I's resolved so far (pending())

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

// The slots of one rank, sorted by chunk.
class RankSlots {
public:
  std::vector<SlotState> &all() { return slots_; }
  const std::vector<SlotState> &all() const { return slots_; }

  SlotState *find(int64_t chunk) {
    auto it = lowerBound(chunk);
    return it != slots_.end() && it->chunk == chunk ? &*it : nullptr;
  }
  // Chunks must come in ascending order; a repeated chunk returns its slot.
  SlotState &append(int32_t chunk) {
    if (slots_.empty() || slots_.back().chunk != chunk) {
      slots_.emplace_back();
      slots_.back().chunk = chunk;
    }
    return slots_.back();
  }

private:
  std::vector<SlotState>::iterator lowerBound(int64_t chunk) {
    return std::lower_bound(slots_.begin(), slots_.end(), chunk,
                            [](const SlotState &s, int64_t c) { return s.chunk < c; });
  }
  std::vector<SlotState> slots_;
};

using SlotTable = std::vector<RankSlots>; // [rank]

} // namespace pipec
