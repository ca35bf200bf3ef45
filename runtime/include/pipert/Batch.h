// BatchSpec and the training data: micro-batch mb's input and target, derived
// from (seed, step, mb) alone, so the first rank of a pipeline, the last and the
// reference generate the same data without sharing anything.
//
// With the mse loss: input and target are tokens x hidden; synthetic data is
// uniform in [-1, 1) (drawn in double and rounded to T, like the parameters);
// token data enters through a fixed embedding (TokenData.h).
// With the cross-entropy loss (a language model): the input is the token ids
// (tokens x 1, exact in T), the target the next token ids (tokens x 1). Each
// sequence of sequenceLength tokens is cut from the token data by the sampler,
// or, without token data, drawn uniformly from [0, vocab) by (seed, mb, j)
// with one more token for the last target.
#pragma once

#include "pipert/Loss.h"
#include "pipert/Tensor.h"

#include <cstdint>

namespace pipert {

class TokenData;

struct BatchSpec {
  int microBatches = 0; // M
  int tokens = 0;       // b, tokens per micro-batch (whole causal sequences)
  int hidden = 0;       // h
  uint64_t seed = 0;
  // Token data instead of synthetic data (TokenData.h): micro-batch mb of step
  // `step`, tokens / sequenceLength sequences. Not owned.
  const TokenData *tokenData = nullptr;
  int64_t step = 0;
  LossKind loss = LossKind::Mse;
  int vocab = 0;          // cross-entropy: token ids are below it (0: any the data holds)
  int sequenceLength = 0; // synthetic token ids: tokens per sequence, 0 for one per
                          // micro-batch (token data has its own)
  // Per-micro-batch sizes (the schedule's `sizes`), indexed by mb modulo the
  // program's micro-batch count (`sizesPeriod`; expert-parallel replicas
  // repeat them): micro-batch mb has tokens * size rows, and its loss is
  // weighted by size * sizesPeriod / sizesTotal, so the step's loss is the
  // mean over every token of the batch times the micro-batch count, as with
  // equal sizes (where each micro-batch's mean counts once). Not owned; null:
  // every size is 1.
  const int32_t *sizes = nullptr;
  int sizesPeriod = 0;
  int64_t sizesTotal = 0;

  int sizeOf(int mb) const { return sizes ? sizes[mb % sizesPeriod] : 1; }
  int tokensOf(int mb) const { return tokens * sizeOf(mb); }
  // The factor micro-batch mb's loss and its gradient are scaled by (1 without sizes).
  double lossWeight(int mb) const {
    return sizes ? double(sizeOf(mb)) * double(sizesPeriod) / double(sizesTotal) : 1.0;
  }
};

// Token ids travel as T: below 2^24 they are exact in fp32 too.
constexpr int64_t kMaxTokenIds = int64_t(1) << 24;

// Columns of a micro-batch's input: 1 (token ids) with cross-entropy, else hidden.
int batchInputWidth(const BatchSpec &batch);

// Throws std::invalid_argument unless M, b and h are positive and, with
// cross-entropy, the token ids are known to lie below 2^24 (and below vocab).
void validateBatch(const BatchSpec &batch);

// Micro-batch mb's data: batch.tokensOf(mb) rows.
template <typename T> Tensor<T> microBatchInput(const BatchSpec &batch, int mb);
template <typename T> Tensor<T> microBatchTarget(const BatchSpec &batch, int mb);

} // namespace pipert
