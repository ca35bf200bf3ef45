// Token data for training: a flat binary of token ids (nanoGPT/Megatron
// style, uint16 or uint32, machine byte order), cut into sequences by a seeded
// sampler. A micro-batch's input is tokens t .. t+seq-1 of each of its
// sequences, its target the next tokens t+1 .. t+seq: as ids (ids(), for a
// language model and the cross-entropy loss) or, for the built-in stages that
// take hidden-size vectors, through a fixed (not trained) embedding (embedded():
// row k is uniform in [-1, 1), drawn from (seed, "embedding.k"); next-token
// regression with the mse loss).
//
// The sampler is stateless: sequence j of micro-batch mb at step s starts at a
// position drawn from (seed, s, mb, j), so the step count is all a resumed run
// needs to draw the same data.
#pragma once

#include "pipert/Tensor.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace pipert {

// The largest --data file a program reads: it is held in memory whole (and its
// ids widened to 32 bits), so a larger one is refused naming its size.
inline constexpr uint64_t kMaxTokenDataBytes = uint64_t(4) << 30;

class TokenData {
public:
  // Reads `path`; `bytesPerToken` is 2 or 4. Throws std::invalid_argument naming
  // the file when it is missing, not a regular file (RegularFile.h), larger
  // than kMaxTokenDataBytes, empty, not a multiple of the element size, or
  // shorter than one sequence plus its next token.
  TokenData(const std::string &path, int bytesPerToken, int sequenceLength);
  TokenData(std::vector<uint32_t> tokens, int sequenceLength); // tests

  size_t size() const { return tokens_.size(); }
  uint32_t largestToken() const { return largest_; }
  int sequenceLength() const { return sequenceLength_; }

  // Where sequence j of micro-batch mb at step `step` starts.
  size_t start(uint64_t seed, int64_t step, int mb, int j) const;

  // Rows: sequences * sequenceLength; `shift` 0 for inputs, 1 for targets.
  template <typename T> Tensor<T> ids(uint64_t seed, int64_t step, int mb, int sequences, int shift) const;
  template <typename T>
  Tensor<T> embedded(uint64_t seed, int64_t step, int mb, int sequences, int hidden, int shift) const;

private:
  void findLargest();

  std::vector<uint32_t> tokens_;
  int sequenceLength_;
  uint32_t largest_ = 0;
};

} // namespace pipert
