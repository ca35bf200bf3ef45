// Synthetic micro-batch data (see Batch.h). Streams use stage index -1, which no
// stage has, so data never shares a stream with a parameter.
#include "pipert/Batch.h"

#include "pipert/Random.h"
#include "pipert/TokenData.h"

#include <stdexcept>
#include <string>

namespace pipert {

void validateBatch(const BatchSpec &batch) {
  auto positive = [](int value, const char *name) {
    if (value <= 0)
      throw std::invalid_argument(std::string("batch: ") + name + " must be positive, got " + std::to_string(value));
  };
  positive(batch.microBatches, "micro-batch count");
  positive(batch.tokens, "tokens per micro-batch");
  positive(batch.hidden, "hidden size");
}

template <typename T> static Tensor<T> tokenBatch(const BatchSpec &batch, int mb, int shift) {
  int length = batch.tokenData->sequenceLength();
  if (length <= 0 || batch.tokens % length != 0)
    throw std::invalid_argument("batch: " + std::to_string(batch.tokens) +
                                " tokens per micro-batch are not whole sequences of " + std::to_string(length));
  return batch.tokenData->embedded<T>(batch.seed, batch.step, mb, batch.tokens / length, batch.hidden, shift);
}

template <typename T> Tensor<T> microBatchInput(const BatchSpec &batch, int mb) {
  validateBatch(batch);
  if (batch.tokenData)
    return tokenBatch<T>(batch, mb, 0);
  Tensor<T> t(static_cast<size_t>(batch.tokens), static_cast<size_t>(batch.hidden));
  fillUniform(t, streamSeed(batch.seed, -1, "input." + std::to_string(mb)), 1.0);
  return t;
}

template <typename T> Tensor<T> microBatchTarget(const BatchSpec &batch, int mb) {
  validateBatch(batch);
  if (batch.tokenData)
    return tokenBatch<T>(batch, mb, 1);
  Tensor<T> t(static_cast<size_t>(batch.tokens), static_cast<size_t>(batch.hidden));
  fillUniform(t, streamSeed(batch.seed, -1, "target." + std::to_string(mb)), 1.0);
  return t;
}

template Tensor<float> microBatchInput<float>(const BatchSpec &, int);
template Tensor<double> microBatchInput<double>(const BatchSpec &, int);
template Tensor<float> microBatchTarget<float>(const BatchSpec &, int);
template Tensor<double> microBatchTarget<double>(const BatchSpec &, int);

} // namespace pipert
