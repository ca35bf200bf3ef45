// Many simulations of one schedule under variability (`pipec sim --jitter`,
// `--slow`) and what they add up to: the step time's distribution and each
// rank's idle time's; and the sensitivity of the step to each rank alone being
// slower. Built on the in-process re-simulation (Simulator.h): one plan, one
// SimResult per thread, per-step durations drawn into one array per thread.
//
// Determinism: sample i draws from its own stream (sampleSeed(seed, i)) and
// writes its own slot; threads take contiguous blocks of samples, and every sum
// runs over the slots in sample order. The result is therefore the same for a
// seed whatever the thread count, run after run.
#pragma once

#include "sim/Jitter.h"
#include "sim/Simulator.h"

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace pipec {

// A sample's summary. Percentiles are nearest-rank: p-th = the ceil(p/100 x N)-th
// smallest of the N values.
struct Distribution {
  double mean = 0, stddev = 0, min = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};
Distribution summarize(std::vector<double> values);

// Each step's duration: its class's under `costs`, times the factor of its rank
// in `slow` (rank, factor); exactly the class's where no factor applies.
std::vector<double> slowedDurations(const SimulationPlan &plan, const CostModel &costs,
                                    const std::vector<std::pair<int64_t, double>> &slow);

struct VariabilityResult {
  std::vector<double> stepTimes;   // by sample
  Distribution stepTime;
  std::vector<Distribution> idle;  // by rank: makespan - busy, per sample
};

// The most samples one run takes, and the most values it keeps: memory is
// samples x (ranks + 1) doubles, at most 256 MiB.
constexpr size_t kMaxSamples = 100000;
constexpr size_t kMaxSampleValues = size_t(1) << 25;

// `samples` runs of `plan`, step k taking base[k] x a multiplier drawn under `jitter`,
// under `network`'s links and rank traffic (its stepDuration is ignored). A sample's
// step time is its SimResult::trafficEnd (the makespan without rank traffic).
// threads 0: every core.
VariabilityResult runVariability(const std::shared_ptr<const SimulationPlan> &plan,
                                 const CostModel &costs, const std::vector<double> &base,
                                 const JitterSpec &jitter, size_t samples, uint64_t seed,
                                 unsigned threads, const SimPerturbation &network = {});

// How much the step grows when one rank alone takes `factor` x its durations (on top
// of `base`), without jitter: one deterministic run per rank.
struct RankSensitivity {
  int64_t rank = 0;
  double growth = 0;   // step time with the rank slowed - step time without
  double relative = 0; // growth / step time without
};
std::vector<RankSensitivity> rankSensitivity(const std::shared_ptr<const SimulationPlan> &plan,
                                             const CostModel &costs,
                                             const std::vector<double> &base, double factor,
                                             unsigned threads, const SimPerturbation &network = {});
// The ranks by growth, largest first (ties: lower rank first).
std::vector<RankSensitivity> mostSensitive(std::vector<RankSensitivity> ranks);

} // namespace pipec
