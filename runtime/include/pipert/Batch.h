// BatchSpec and the synthetic training data: micro-batch mb's input (tokens x
// hidden, uniform in [-1, 1)) and MSE target, derived from (seed, mb) alone, so
// the first rank of a pipeline and the reference generate the same data without
// sharing anything. Drawn in double and rounded to T, like the parameters.
#pragma once

#include "pipert/Tensor.h"

#include <cstdint>

namespace pipert {

class TokenData;

struct BatchSpec {
  int microBatches = 0; // M
  int tokens = 0;       // b, tokens per micro-batch (one causal sequence)
  int hidden = 0;       // h
  uint64_t seed = 0;
  // Token data instead of synthetic data (TokenData.h): micro-batch mb of step
  // `step`, tokens / sequenceLength sequences. Not owned.
  const TokenData *tokenData = nullptr;
  int64_t step = 0;
};

// Throws std::invalid_argument unless M, b and h are positive.
void validateBatch(const BatchSpec &batch);

template <typename T> Tensor<T> microBatchInput(const BatchSpec &batch, int mb);
template <typename T> Tensor<T> microBatchTarget(const BatchSpec &batch, int mb);

} // namespace pipert
