// TokenData (see TokenData.h).
#include "pipert/TokenData.h"

#include "pipert/Random.h"
#include "pipert/RegularFile.h"

#include <algorithm>
#include <cstring>

namespace pipert {

TokenData::TokenData(const std::string &path, int bytesPerToken, int sequenceLength)
    : sequenceLength_(sequenceLength) {
  FileRead file = readRegularFile(path, kMaxTokenDataBytes);
  if (!file.ok)
    throw std::invalid_argument("--data " + path + ": " + file.problem);
  const std::string &bytes = file.bytes;
  if (bytes.empty())
    throw std::invalid_argument("--data " + path + ": the file is empty");
  if (bytes.size() % size_t(bytesPerToken) != 0)
    throw std::invalid_argument("--data " + path + ": " + std::to_string(bytes.size()) +
                                " bytes is not a whole number of uint" +
                                std::to_string(8 * bytesPerToken) + " tokens");
  tokens_.resize(bytes.size() / size_t(bytesPerToken));
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (bytesPerToken == 2) {
      uint16_t t;
      std::memcpy(&t, bytes.data() + 2 * i, 2);
      tokens_[i] = t;
    } else {
      std::memcpy(&tokens_[i], bytes.data() + 4 * i, 4);
    }
  }
  if (tokens_.size() < size_t(sequenceLength) + 1)
    throw std::invalid_argument("--data " + path + ": " + std::to_string(tokens_.size()) +
                                " tokens, too short for one sequence of --seq " +
                                std::to_string(sequenceLength) + " and its next token");
  findLargest();
}

void TokenData::findLargest() {
  for (uint32_t t : tokens_)
    largest_ = std::max(largest_, t);
}

TokenData::TokenData(std::vector<uint32_t> tokens, int sequenceLength)
    : tokens_(std::move(tokens)), sequenceLength_(sequenceLength) {
  if (tokens_.size() < size_t(sequenceLength) + 1)
    throw std::invalid_argument("token data: too short for one sequence");
  findLargest();
}

size_t TokenData::start(uint64_t seed, int64_t step, int mb, int j) const {
  uint64_t stream = streamSeed(seed, -3, "sample." + std::to_string(step) + "." + std::to_string(mb) +
                                             "." + std::to_string(j));
  size_t positions = tokens_.size() - size_t(sequenceLength_); // starts 0 .. size-seq-1
  return size_t(SplitMix64(stream).next() % positions);
}

template <typename T>
Tensor<T> TokenData::ids(uint64_t seed, int64_t step, int mb, int sequences, int shift) const {
  Tensor<T> out(size_t(sequences) * size_t(sequenceLength_), 1);
  for (int j = 0; j < sequences; ++j) {
    size_t first = start(seed, step, mb, j) + size_t(shift);
    for (int t = 0; t < sequenceLength_; ++t)
      out[size_t(j) * size_t(sequenceLength_) + size_t(t)] = static_cast<T>(tokens_[first + size_t(t)]);
  }
  return out;
}

template <typename T>
Tensor<T> TokenData::embedded(uint64_t seed, int64_t step, int mb, int sequences, int hidden,
                              int shift) const {
  Tensor<T> out(size_t(sequences) * size_t(sequenceLength_), size_t(hidden));
  Tensor<T> row(1, size_t(hidden));
  for (int j = 0; j < sequences; ++j) {
    size_t first = start(seed, step, mb, j) + size_t(shift);
    for (int t = 0; t < sequenceLength_; ++t) {
      fillUniform(row, streamSeed(seed, -2, "embedding." + std::to_string(tokens_[first + t])), 1.0);
      std::memcpy(out.row(size_t(j) * size_t(sequenceLength_) + size_t(t)), row.data(),
                  sizeof(T) * size_t(hidden));
    }
  }
  return out;
}

template Tensor<float> TokenData::ids<float>(uint64_t, int64_t, int, int, int) const;
template Tensor<double> TokenData::ids<double>(uint64_t, int64_t, int, int, int) const;
template Tensor<float> TokenData::embedded<float>(uint64_t, int64_t, int, int, int, int) const;
template Tensor<double> TokenData::embedded<double>(uint64_t, int64_t, int, int, int, int) const;

} // namespace pipert
