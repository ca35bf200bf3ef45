#include "sim/Variability.h"

#include "support/WorkerThreads.h"

#include <algorithm>
#include <cmath>
#include <system_error>
#include <thread>

namespace pipec {

namespace {

// At most the cores (and limits::kMaxThreads), however many --threads asks for.
unsigned threadCount(unsigned requested, size_t work) { return clampThreads(requested, work); }

// Runs job(begin, end) over [0, count) in `threads` contiguous blocks. A block
// whose thread the system refuses (std::system_error, as under `ulimit -v`)
// runs on the calling thread: each sample depends only on its index, so the
// results are the same however many threads started.
template <typename Job> void inBlocks(size_t count, unsigned threads, Job job) {
  std::vector<std::thread> workers;
  std::vector<std::pair<size_t, size_t>> refused;
  size_t block = (count + threads - 1) / threads;
  for (unsigned t = 1; t < threads; ++t) {
    size_t begin = std::min(count, t * block), end = std::min(count, begin + block);
    if (begin >= end)
      continue;
    try {
      workers.emplace_back([&job, begin, end] { job(begin, end); });
    } catch (const std::system_error &) {
      refused.emplace_back(begin, end);
    }
  }
  job(0, std::min(count, block));
  for (auto [begin, end] : refused)
    job(begin, end);
  for (std::thread &w : workers)
    w.join();
}

double nearestRank(const std::vector<double> &sorted, double p) {
  size_t n = sorted.size();
  size_t rank = size_t(std::ceil(p * double(n)));
  return sorted[std::min(n, std::max<size_t>(rank, 1)) - 1];
}

} // namespace

Distribution summarize(std::vector<double> values) {
  Distribution d;
  if (values.empty())
    return d;
  double sum = 0;
  for (double v : values)
    sum += v;
  d.mean = sum / double(values.size());
  double squares = 0;
  for (double v : values)
    squares += (v - d.mean) * (v - d.mean);
  d.stddev = values.size() > 1 ? std::sqrt(squares / double(values.size() - 1)) : 0;
  std::sort(values.begin(), values.end());
  d.min = values.front();
  d.max = values.back();
  d.p50 = nearestRank(values, 0.50);
  d.p90 = nearestRank(values, 0.90);
  d.p99 = nearestRank(values, 0.99);
  return d;
}

std::vector<double> slowedDurations(const SimulationPlan &plan, const CostModel &costs,
                                    const std::vector<std::pair<int64_t, double>> &slow) {
  std::vector<double> durations;
  stepDurations(plan, costs, durations);
  for (auto [rank, factor] : slow)
    if (rank >= 0 && size_t(rank) < plan.numRanks())
      for (uint32_t k = plan.rankStep[rank]; k < plan.rankStep[rank + 1]; ++k)
        durations[k] *= factor;
  return durations;
}

VariabilityResult runVariability(const std::shared_ptr<const SimulationPlan> &plan,
                                 const CostModel &costs, const std::vector<double> &base,
                                 const JitterSpec &jitter, size_t samples, uint64_t seed,
                                 unsigned threads, const SimPerturbation &network) {
  VariabilityResult out;
  size_t ranks = plan->numRanks(), steps = plan->numSteps();
  out.stepTimes.assign(samples, 0.0);
  std::vector<double> idle(ranks * samples, 0.0); // [rank][sample]
  // The op kind each step draws for (trace jitter pools by kind; 4: a pair).
  std::vector<uint8_t> kinds(steps);
  for (uint32_t k = 0; k < steps; ++k) {
    const StepClass &c = plan->classes[plan->stepClass(k)];
    kinds[k] = c.pair ? 4 : uint8_t(c.kind);
  }
  JitterSampler sampler(jitter);
  inBlocks(samples, threadCount(threads, samples), [&](size_t begin, size_t end) {
    SimResult result;
    std::vector<double> durations(steps);
    for (size_t i = begin; i < end; ++i) {
      SplitMix64 rng(sampleSeed(seed, i));
      for (uint32_t k = 0; k < steps; ++k)
        durations[k] = base[k] * sampler.multiplier(rng, kinds[k]);
      simulate(plan, costs, result, {durations.data(), network.links, network.rankTraffic});
      out.stepTimes[i] = result.trafficEnd;
      for (size_t r = 0; r < ranks; ++r)
        idle[r * samples + i] = result.ranks[r].bubble;
    }
  });
  out.stepTime = summarize(out.stepTimes);
  out.idle.reserve(ranks);
  for (size_t r = 0; r < ranks; ++r)
    out.idle.push_back(summarize(std::vector<double>(idle.begin() + long(r * samples),
                                                     idle.begin() + long((r + 1) * samples))));
  return out;
}

std::vector<RankSensitivity> rankSensitivity(const std::shared_ptr<const SimulationPlan> &plan,
                                             const CostModel &costs,
                                             const std::vector<double> &base, double factor,
                                             unsigned threads, const SimPerturbation &network) {
  size_t ranks = plan->numRanks();
  SimResult baseline;
  simulate(plan, costs, baseline, {base.data(), network.links, network.rankTraffic});
  std::vector<RankSensitivity> out(ranks);
  inBlocks(ranks, threadCount(threads, ranks), [&](size_t begin, size_t end) {
    SimResult result;
    std::vector<double> durations = base;
    for (size_t r = begin; r < end; ++r) {
      for (uint32_t k = plan->rankStep[r]; k < plan->rankStep[r + 1]; ++k)
        durations[k] = base[k] * factor;
      simulate(plan, costs, result, {durations.data(), network.links, network.rankTraffic});
      for (uint32_t k = plan->rankStep[r]; k < plan->rankStep[r + 1]; ++k)
        durations[k] = base[k];
      double growth = result.trafficEnd - baseline.trafficEnd;
      out[r] = {int64_t(r), growth, baseline.trafficEnd > 0 ? growth / baseline.trafficEnd : 0};
    }
  });
  return out;
}

std::vector<RankSensitivity> mostSensitive(std::vector<RankSensitivity> ranks) {
  std::stable_sort(ranks.begin(), ranks.end(), [](const RankSensitivity &a, const RankSensitivity &b) {
    return a.growth > b.growth;
  });
  return ranks;
}

} // namespace pipec
