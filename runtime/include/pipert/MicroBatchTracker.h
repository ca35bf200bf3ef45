// MicroBatchTracker: the per-micro-batch protocol of a stage, checked. It
// records how far each stored micro-batch has got (forward parts run, backward
// parts run, whether weight gradients were deferred) and rejects any call out
// of order -- backward before forward, parts skipped or repeated, W without I,
// a micro-batch forwarded twice -- with a std::logic_error naming the stage,
// the micro-batch and what was expected. Executor bugs then surface as a clear
// message on the rank that made them, not as silently wrong gradients.
#pragma once

#include "pipert/SubOp.h"

#include <cstddef>
#include <map>
#include <string>

namespace pipert {

class MicroBatchTracker {
public:
  explicit MicroBatchTracker(std::string owner) : owner_(std::move(owner)) {}

  // Each call checks that the step is legal next and records it (before the
  // stage runs it). `tokens` is the micro-batch's row count, set by its first
  // forward part.
  void forwardPart(int mb, SubOp part, size_t tokens);
  // Returns true when `part` is the last backward part (Attention).
  bool backwardPart(int mb, SubOp part, WeightGrad when);
  void backwardWeight(int mb);
  // Offload: mb's forward has completed and no backward part has run; from
  // now on mb is not stored here and every call on it but reload fails.
  void offload(int mb);
  // Reload: mb is offloaded; it is stored here again, as it was.
  void reload(int mb);
  // Forget `mb` (its backward, or its W, has completed; or it is discarded).
  void finish(int mb);
  void clear() {
    progress_.clear();
    offloaded_ = 0;
  }

  bool forwardDone(int mb) const;
  bool offloaded(int mb) const {
    auto it = progress_.find(mb);
    return it != progress_.end() && it->second.offloaded;
  }
  size_t tokens(int mb) const;
  // Micro-batches stored here: forwarded and not freed, less the offloaded ones.
  size_t pending() const { return progress_.size() - offloaded_; }
  const std::string &owner() const { return owner_; }

private:
  struct Progress {
    size_t tokens = 0;
    int forwardDone = 0;  // parts of kForwardParts run
    int backwardDone = 0; // parts of kBackwardParts run
    WeightGrad when = WeightGrad::Now;
    bool offloaded = false; // its state is in host memory until reload
  };
  [[noreturn]] void fail(int mb, const std::string &what) const;
  Progress &stored(int mb, const char *call);

  std::string owner_;
  std::map<int, Progress> progress_;
  size_t offloaded_ = 0; // entries of progress_ with `offloaded` set
};

} // namespace pipert
