// The legality rules of MicroBatchTracker.h, one function per kind of call.
#include "pipert/MicroBatchTracker.h"

#include <stdexcept>

namespace pipert {

void MicroBatchTracker::fail(int mb, const std::string &what) const {
  throw std::logic_error(owner_ + ", micro-batch " + std::to_string(mb) + ": " + what);
}

MicroBatchTracker::Progress &MicroBatchTracker::stored(int mb, const char *call) {
  auto it = progress_.find(mb);
  if (it == progress_.end())
    fail(mb, std::string(call) + " but no forward of it is stored");
  if (it->second.offloaded)
    fail(mb, std::string(call) + " while its stored state is offloaded (missing Reload?)");
  return it->second;
}

void MicroBatchTracker::offload(int mb) {
  Progress &p = stored(mb, "offload");
  if (p.forwardDone != static_cast<int>(kForwardParts.size()) || p.backwardDone != 0)
    fail(mb, "offload between the parts of its forward or after its backward started");
  p.offloaded = true;
  ++offloaded_;
}

void MicroBatchTracker::reload(int mb) {
  auto it = progress_.find(mb);
  if (it == progress_.end() || !it->second.offloaded)
    fail(mb, "reload but it is not offloaded");
  it->second.offloaded = false;
  --offloaded_;
}

void MicroBatchTracker::finish(int mb) {
  auto it = progress_.find(mb);
  if (it == progress_.end())
    return;
  offloaded_ -= it->second.offloaded ? 1 : 0;
  progress_.erase(it);
}

void MicroBatchTracker::forwardPart(int mb, SubOp part, size_t tokens) {
  auto it = progress_.find(mb);
  if (it != progress_.end() && it->second.offloaded)
    fail(mb, "forward while its earlier forward's state is offloaded");
  if (part == kForwardParts.front()) {
    if (it != progress_.end())
      fail(mb, "forward started again while its earlier forward is still stored (missing backward or W?)");
    progress_[mb].tokens = tokens;
    progress_[mb].forwardDone = 1;
    return;
  }
  if (it == progress_.end())
    fail(mb, std::string("forward part ") + subOpName(part) + " before its attention part");
  Progress &p = it->second;
  if (p.forwardDone != forwardPosition(part)) {
    if (p.forwardDone == static_cast<int>(kForwardParts.size()))
      fail(mb, std::string("forward part ") + subOpName(part) + " after its forward completed");
    fail(mb, std::string("forward part ") + subOpName(part) + " out of order; next is " +
                 subOpName(kForwardParts[static_cast<size_t>(p.forwardDone)]));
  }
  ++p.forwardDone;
}

bool MicroBatchTracker::backwardPart(int mb, SubOp part, WeightGrad when) {
  Progress &p = stored(mb, "backward");
  const int forwardParts = static_cast<int>(kForwardParts.size());
  if (p.forwardDone != forwardParts)
    fail(mb, "backward before its forward completed (" + std::to_string(p.forwardDone) + " of " +
                 std::to_string(forwardParts) + " forward parts run)");
  if (p.backwardDone == static_cast<int>(kBackwardParts.size()))
    fail(mb, "backward again; its input-gradient half already ran and waits for W");
  if (p.backwardDone != backwardPosition(part))
    fail(mb, std::string("backward part ") + subOpName(part) + " out of order; next is " +
                 subOpName(kBackwardParts[static_cast<size_t>(p.backwardDone)]));
  if (p.backwardDone == 0)
    p.when = when;
  else if (p.when != when)
    fail(mb, "backward parts mix full B (WeightGrad::Now) and the I half (WeightGrad::Deferred)");
  ++p.backwardDone;
  return p.backwardDone == static_cast<int>(kBackwardParts.size());
}

void MicroBatchTracker::backwardWeight(int mb) {
  Progress &p = stored(mb, "backwardWeight (W)");
  if (p.backwardDone != static_cast<int>(kBackwardParts.size()) || p.when != WeightGrad::Deferred)
    fail(mb, "backwardWeight (W) without a completed backwardInput (I)");
}

bool MicroBatchTracker::forwardDone(int mb) const {
  auto it = progress_.find(mb);
  return it != progress_.end() && it->second.forwardDone == static_cast<int>(kForwardParts.size());
}

size_t MicroBatchTracker::tokens(int mb) const {
  auto it = progress_.find(mb);
  return it == progress_.end() ? 0 : it->second.tokens;
}

} // namespace pipert
