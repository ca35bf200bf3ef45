// Per-operation variability for `pipec sim --jitter`: how one step's duration is
// drawn around its cost, and the random numbers it is drawn with.
//
// Every distribution keeps the step's cost as its mean:
//   lognormal:CV  d = cost * exp(sigma z - sigma^2 / 2), sigma^2 = ln(1 + CV^2)
//                 (mean cost, coefficient of variation CV; never negative);
//   normal:CV     d = max(0, cost * (1 + CV z)) (mean cost while CV <= 0.3: the
//                 clamp at 0 then touches less than 0.05% of draws);
//   trace:FILE    d = cost * ratio, the ratio drawn uniformly from a measured
//                 trace's durations, each divided by the mean of its own stage and
//                 op kind (so the ratios have mean 1), pooled per op kind (F, B, I,
//                 W; an overlap pair and a kind the trace lacks draw from all).
// z is a standard normal from Box-Muller over a SplitMix64 stream: fixed,
// portable arithmetic, so a seed gives the same draws on every machine and run.
#pragma once

#include "elab/ScheduleIR.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipec {

struct JitterSpec {
  enum class Kind { None, LogNormal, Normal, Trace } kind = Kind::None;
  double cv = 0;
  std::string traceFile;
  // trace: ratios per op kind (F, B, I, W) and all of them pooled.
  std::array<std::vector<double>, 4> ratios;
  std::vector<double> pooled;

  bool active() const { return kind != Kind::None; }
  // "lognormal CV 0.1", "trace t.json (240 measured ops)"
  std::string describe() const;
};

// "lognormal:0.1", "normal:0.05", "trace:FILE" (the trace is read later, into
// ratios). nullopt with `error` set when the text is none of these.
std::optional<JitterSpec> parseJitter(const std::string &text, std::string &error);

// The SplitMix64 generator (Steele, Lea, Flood 2014): one 64-bit state, passes
// BigCrush, and any seed (0 too) is fine.
class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1]: never 0, so its logarithm is finite.
  double uniformOpen() { return double((next() >> 11) + 1) * 0x1.0p-53; }
  double normal() {
    if (haveSpare_) {
      haveSpare_ = false;
      return spare_;
    }
    double radius = std::sqrt(-2.0 * std::log(uniformOpen()));
    double angle = 2 * M_PI * uniformOpen();
    spare_ = radius * std::sin(angle);
    haveSpare_ = true;
    return radius * std::cos(angle);
  }

private:
  uint64_t state_;
  double spare_ = 0;
  bool haveSpare_ = false;
};

// The seed of sample `index` under the run's `seed`: each sample its own stream,
// so a sample's draws do not depend on which thread runs it, or when.
inline uint64_t sampleSeed(uint64_t seed, uint64_t index) {
  SplitMix64 mix(seed ^ (index * 0xd1b54a32d192ed03ull));
  return mix.next();
}

// Draws multipliers (duration / cost) under one spec.
class JitterSampler {
public:
  explicit JitterSampler(const JitterSpec &spec);
  // kind: 0..3 for F, B, I, W; 4 for an overlap pair.
  double multiplier(SplitMix64 &rng, int kind) const {
    switch (spec_.kind) {
    case JitterSpec::Kind::None: return 1.0;
    case JitterSpec::Kind::LogNormal: return std::exp(sigma_ * rng.normal() - halfVariance_);
    case JitterSpec::Kind::Normal: return std::max(0.0, 1.0 + spec_.cv * rng.normal());
    case JitterSpec::Kind::Trace: {
      const std::vector<double> &from = kind < 4 && !spec_.ratios[kind].empty()
                                            ? spec_.ratios[kind] : spec_.pooled;
      return from[size_t(rng.next() % from.size())];
    }
    }
    return 1.0;
  }

private:
  const JitterSpec &spec_;
  double sigma_ = 0, halfVariance_ = 0;
};

} // namespace pipec
