// Micro-batch data (see Batch.h). Streams use stage index -1, which no stage
// has, so data never shares a stream with a parameter.
#include "pipert/Batch.h"

#include "pipert/Random.h"
#include "pipert/TokenData.h"

#include <stdexcept>
#include <string>

namespace pipert {

int batchInputWidth(const BatchSpec &batch) { return batch.loss == LossKind::CrossEntropy ? 1 : batch.hidden; }

void validateBatch(const BatchSpec &batch) {
  auto positive = [](int value, const char *name) {
    if (value <= 0)
      throw std::invalid_argument(std::string("batch: ") + name + " must be positive, got " + std::to_string(value));
  };
  positive(batch.microBatches, "micro-batch count");
  positive(batch.tokens, "tokens per micro-batch");
  positive(batch.hidden, "hidden size");
  if (batch.sizes) {
    if (batch.sizesPeriod <= 0 || batch.sizesTotal <= 0)
      throw std::invalid_argument("batch: micro-batch sizes without a count or total");
    for (int mb = 0; mb < batch.sizesPeriod; ++mb)
      if (batch.sizes[mb] < 1 || int64_t(batch.tokens) * batch.sizes[mb] > kMaxTokenIds)
        throw std::invalid_argument("batch: micro-batch " + std::to_string(mb) + " of size " +
                                    std::to_string(batch.sizes[mb]) + " would hold more than 2^24 tokens (" +
                                    std::to_string(batch.tokens) + " per unit of size)");
  }
  if (batch.loss != LossKind::CrossEntropy)
    return;
  if (batch.vocab < 0 || batch.vocab > kMaxTokenIds)
    throw std::invalid_argument("batch: vocabulary " + std::to_string(batch.vocab) + " outside 1 .. 2^24");
  if (!batch.tokenData) {
    if (batch.vocab == 0)
      throw std::invalid_argument("batch: synthetic token ids need a vocabulary size (--vocab N)");
    if (batch.sequenceLength < 0 || (batch.sequenceLength > 0 && batch.tokens % batch.sequenceLength != 0))
      throw std::invalid_argument("batch: " + std::to_string(batch.tokens) +
                                  " tokens per micro-batch are not whole sequences of " +
                                  std::to_string(batch.sequenceLength));
    return;
  }
  const int64_t largest = batch.tokenData->largestToken();
  if (largest >= kMaxTokenIds)
    throw std::invalid_argument("batch: the token data holds id " + std::to_string(largest) +
                                ", not exact as a tensor value (ids must be below 2^24)");
  if (batch.vocab > 0 && largest >= batch.vocab)
    throw std::invalid_argument("batch: the token data holds id " + std::to_string(largest) +
                                ", outside the vocabulary of " + std::to_string(batch.vocab));
}

// Whole sequences of the token data's length.
static int tokenSequences(const BatchSpec &batch) {
  int length = batch.tokenData->sequenceLength();
  if (length <= 0 || batch.tokens % length != 0)
    throw std::invalid_argument("batch: " + std::to_string(batch.tokens) +
                                " tokens per micro-batch are not whole sequences of " + std::to_string(length));
  return batch.tokens / length;
}

// Synthetic ids: sequence j of micro-batch mb is length + 1 ids from (seed, mb, j);
// `shift` 0 takes the first `length`, 1 the last.
template <typename T> static Tensor<T> syntheticIds(const BatchSpec &batch, int mb, int shift) {
  const int length = batch.sequenceLength > 0 ? batch.sequenceLength : batch.tokens;
  Tensor<T> out(static_cast<size_t>(batch.tokens), 1);
  for (int j = 0; j < batch.tokens / length; ++j) {
    SplitMix64 rng(streamSeed(batch.seed, -1, "tokens." + std::to_string(mb) + "." + std::to_string(j)));
    for (int t = 0; t <= length; ++t) {
      const uint64_t id = rng.next() % static_cast<uint64_t>(batch.vocab);
      if (t - shift >= 0 && t - shift < length)
        out[static_cast<size_t>(j) * static_cast<size_t>(length) + static_cast<size_t>(t - shift)] = static_cast<T>(id);
    }
  }
  return out;
}

template <typename T> static Tensor<T> batchData(const BatchSpec &spec, int mb, int shift, const char *name) {
  validateBatch(spec);
  BatchSpec batch = spec; // micro-batch mb's rows: tokens times its size
  batch.tokens = spec.tokensOf(mb);
  if (batch.loss == LossKind::CrossEntropy) {
    if (batch.tokenData)
      return batch.tokenData->ids<T>(batch.seed, batch.step, mb, tokenSequences(batch), shift);
    return syntheticIds<T>(batch, mb, shift);
  }
  if (batch.tokenData)
    return batch.tokenData->embedded<T>(batch.seed, batch.step, mb, tokenSequences(batch), batch.hidden, shift);
  Tensor<T> t(static_cast<size_t>(batch.tokens), static_cast<size_t>(batch.hidden));
  fillUniform(t, streamSeed(batch.seed, -1, name + std::string(".") + std::to_string(mb)), 1.0);
  return t;
}

template <typename T> Tensor<T> microBatchInput(const BatchSpec &batch, int mb) {
  return batchData<T>(batch, mb, 0, "input");
}

template <typename T> Tensor<T> microBatchTarget(const BatchSpec &batch, int mb) {
  return batchData<T>(batch, mb, 1, "target");
}

template Tensor<float> microBatchInput<float>(const BatchSpec &, int);
template Tensor<double> microBatchInput<double>(const BatchSpec &, int);
template Tensor<float> microBatchTarget<float>(const BatchSpec &, int);
template Tensor<double> microBatchTarget<double>(const BatchSpec &, int);

} // namespace pipert
