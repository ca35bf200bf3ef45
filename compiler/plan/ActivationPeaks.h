// The moments of a compiled schedule at which a rank's stored activations can
// peak, as live micro-batches per stage, so that the planner weighs each
// in-flight chunk by its own stage's bytes. The memory check counts a rank's
// peak in chunk units (check/Memory.cpp); multiplying that count by the rank's
// largest stage overstates a rank whose stages differ: Llama 3's first rank
// (Dubey et al. 2024, §3.3.2) holds an embedding-only chunk beside full ones,
// and with one layer fewer on the first stage its warm-up holds many of the
// short chunk's micro-batches. The moments are found once per compiled
// schedule; each candidate's stage bytes then cost one dot product a moment.
#pragma once

#include "elab/ScheduleIR.h"

#include <cstdint>
#include <vector>

namespace pipec::plan {

struct RankActivationPeaks {
  std::vector<int32_t> stages; // the stages the rank stores activations of, ascending
  // Each candidate peak: live micro-batches (of size 1) per entry of `stages`,
  // taken where the rank's live count stops rising; only those that no other
  // moment dominates stage by stage are kept (with non-negative bytes a
  // dominated one is never the peak).
  std::vector<std::vector<double>> moments;

  // The largest stored bytes over the moments, `stageBytes[s]` a micro-batch of
  // stage s (indexed by global stage); 0 when the rank stores nothing.
  double peakBytes(const std::vector<double> &stageBytes) const;
  // The largest live count over the moments: the memory check's peakActivations.
  double peakCount() const;
};

// Per rank of `ir`, with the memory check's accounting (check/Checks.h
// activationDelta: F, R, Reload, Load, Hold store one; B, W, Offload, Evict,
// Return free one; a recomputed forward keeps nothing once it has run; a
// micro-batch of size k counts k).
std::vector<RankActivationPeaks> activationPeaks(const ScheduleIR &ir);

} // namespace pipec::plan
