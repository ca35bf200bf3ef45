// Times of the collectives the cost model charges, on a ring or a full
// exchange, from per-GPU bytes, a one-direction bandwidth and a per-message
// latency (the alpha-beta model).
#include "plan/StageCosts.h"

namespace pipec::plan {

double messageSeconds(double bytes, double bandwidth, double latency) {
  return latency + bytes / bandwidth;
}

// Ring all-reduce: a reduce-scatter then an all-gather, each n-1 steps moving
// bytes/n, so every GPU sends 2(n-1)/n of its bytes.
double ringAllReduceSeconds(double bytes, int64_t n, double bandwidth, double latency) {
  if (n <= 1)
    return 0;
  double steps = 2 * double(n - 1);
  return steps * latency + steps / double(n) * bytes / bandwidth;
}

// Half of the ring all-reduce; an all-gather of the same bytes costs the same.
double reduceScatterSeconds(double bytes, int64_t n, double bandwidth, double latency) {
  if (n <= 1)
    return 0;
  double steps = double(n - 1);
  return steps * latency + steps / double(n) * bytes / bandwidth;
}

// Each GPU keeps 1/ep of its tokens' copies and sends the rest at once.
double allToAllSeconds(double bytes, int64_t ep, double bandwidth, double latency) {
  if (ep <= 1)
    return 0;
  return latency + double(ep - 1) / double(ep) * bytes / bandwidth;
}

} // namespace pipec::plan
