// Deterministic, platform-independent random numbers for parameter
// initialization and synthetic batches. std::*_distribution is avoided because
// its output differs between standard libraries; values are drawn as doubles
// and then rounded to T, so an fp32 model is exactly the rounded fp64 model.
//
// Every tensor gets its own stream, derived from (seed, stage index, name):
// a parameter's initial value depends on nothing else, so two copies of a stage
// start identical, and an expert's weights do not depend on how experts are
// sharded across an expert-parallel group.
#pragma once

#include "pipert/Tensor.h"

#include <cstdint>
#include <string>

namespace pipert {

// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and good enough here.
class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [-1, 1), 53 random bits.
  double uniformSigned();

private:
  uint64_t state_;
};

// A stream seed for the tensor called `name` of stage `stageIndex` under `seed`.
uint64_t streamSeed(uint64_t seed, int64_t stageIndex, const std::string &name);

// Fills `t` (already shaped) with values uniform in [-bound, bound).
template <typename T>
void fillUniform(Tensor<T> &t, uint64_t stream, double bound) {
  SplitMix64 rng(stream);
  for (size_t i = 0; i < t.size(); ++i)
    t[i] = static_cast<T>(bound * rng.uniformSigned());
}

} // namespace pipert
