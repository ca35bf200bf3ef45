// The losses (Loss.h) and the language-model batches (Batch.h, TokenData.h):
// cross-entropy against a hand-computed case and finite differences, its
// stability and its refusals; token-id batches and their one-token shift.
#include "pipert/Batch.h"
#include "pipert/Loss.h"
#include "pipert/Random.h"
#include "pipert/TokenData.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

using namespace pipert;

namespace {

Tensor<double> column(std::vector<double> values) {
  Tensor<double> t(values.size(), 1);
  for (size_t i = 0; i < values.size(); ++i)
    t[i] = values[i];
  return t;
}

} // namespace

TEST_CASE("cross-entropy matches a hand-computed case", "[runtime][loss]") {
  // Row 0: uniform over 3 tokens, target 1: -log(1/3). Row 1: softmax (1/6, 2/6, 3/6),
  // target 2: -log(1/2). The micro-batch loss is their mean.
  Tensor<double> logits(2, 3);
  logits(1, 1) = std::log(2.0);
  logits(1, 2) = std::log(3.0);
  Tensor<double> target = column({1, 2}), grad;
  CHECK(crossEntropyLoss(logits, target) == Approx(std::log(6.0) / 2).epsilon(1e-15));
  CHECK(lossAndGrad(LossKind::CrossEntropy, logits, target, grad) == Approx(std::log(6.0) / 2).epsilon(1e-15));
  REQUIRE(grad.rows() == 2);
  REQUIRE(grad.cols() == 3);
  const double expected[2][3] = {{1.0 / 6, 1.0 / 6 - 0.5, 1.0 / 6}, {1.0 / 12, 1.0 / 6, 0.25 - 0.5}};
  for (size_t r = 0; r < 2; ++r)
    for (size_t c = 0; c < 3; ++c)
      CHECK(grad(r, c) == Approx(expected[r][c]).margin(1e-15));
}

TEST_CASE("cross-entropy's gradient matches finite differences", "[runtime][loss]") {
  Tensor<double> logits(5, 7);
  fillUniform(logits, 11, 3.0);
  Tensor<double> target = column({0, 6, 3, 3, 1}), grad;
  crossEntropyLossGrad(logits, target, grad);
  const double h = 1e-6;
  for (size_t i = 0; i < logits.size(); ++i) {
    Tensor<double> plus = logits, minus = logits;
    plus[i] += h;
    minus[i] -= h;
    double numeric = (crossEntropyLoss(plus, target) - crossEntropyLoss(minus, target)) / (2 * h);
    CHECK(grad[i] == Approx(numeric).margin(1e-9));
  }
  // In fp32 the loss is still accumulated in double from the rounded logits.
  Tensor<float> logits32 = tensorCast<float>(logits), target32 = tensorCast<float>(target), grad32;
  CHECK(lossAndGrad(LossKind::CrossEntropy, logits32, target32, grad32) ==
        Approx(crossEntropyLoss(tensorCast<double>(logits32), target)).epsilon(1e-15));
  for (size_t i = 0; i < grad.size(); ++i)
    CHECK(grad32[i] == Approx(grad[i]).margin(1e-6));
}

TEST_CASE("cross-entropy is stable for large logits", "[runtime][loss]") {
  Tensor<double> logits(1, 2, 1000.0), grad;
  logits(0, 1) = 1000.0 + std::log(3.0);
  Tensor<double> target = column({0});
  // softmax (1/4, 3/4): -log(1/4), where exp(1000) alone would overflow.
  CHECK(crossEntropyLoss(logits, target) == Approx(std::log(4.0)).epsilon(1e-12));
  crossEntropyLossGrad(logits, target, grad);
  CHECK(grad(0, 0) == Approx(-0.75).epsilon(1e-12));
  CHECK(grad(0, 1) == Approx(0.75).epsilon(1e-12));
  Tensor<float> low(1, 2, -1e30f), target32(1, 1);
  CHECK(std::isfinite(crossEntropyLoss(low, target32)));
}

TEST_CASE("cross-entropy refuses targets that are not token ids", "[runtime][loss]") {
  Tensor<double> logits(2, 4), grad;
  CHECK_THROWS_WITH(crossEntropyLoss(logits, column({0, 4})), Catch::Contains("below the vocabulary of 4"));
  CHECK_THROWS_AS(crossEntropyLoss(logits, column({0, -1})), std::invalid_argument);
  CHECK_THROWS_AS(crossEntropyLossGrad(logits, column({0, 1.5}), grad), std::invalid_argument);
  CHECK_THROWS_AS(crossEntropyLoss(logits, column({0, NAN})), std::invalid_argument);
  CHECK_THROWS_WITH(crossEntropyLoss(logits, column({0})), Catch::Contains("expected tokens x vocab"));
  CHECK_THROWS_AS(crossEntropyLoss(logits, Tensor<double>(2, 4)), std::invalid_argument);
}

TEST_CASE("mse through lossAndGrad is the mse of Loss.h", "[runtime][loss]") {
  Tensor<double> y(3, 2), target(3, 2), grad, expected;
  fillUniform(y, 1, 1.0);
  fillUniform(target, 2, 1.0);
  mseLossGrad(y, target, expected);
  CHECK(lossAndGrad(LossKind::Mse, y, target, grad) == mseLoss(y, target));
  CHECK(grad.identical(expected));
  CHECK(lossOnly(LossKind::Mse, y, target) == mseLoss(y, target));
}

TEST_CASE("token-id batches: ids as a column, targets the next token", "[runtime][loss]") {
  std::vector<uint32_t> tokens;
  for (uint32_t i = 0; i < 200; ++i)
    tokens.push_back(i);
  TokenData data(tokens, /*sequenceLength=*/8);
  BatchSpec batch{/*M=*/3, /*tokens=*/16, /*hidden=*/4, /*seed=*/5};
  batch.tokenData = &data;
  batch.loss = LossKind::CrossEntropy;
  batch.step = 2;
  CHECK(batchInputWidth(batch) == 1);
  for (int mb = 0; mb < 3; ++mb) {
    Tensor<double> in = microBatchInput<double>(batch, mb), target = microBatchTarget<double>(batch, mb);
    REQUIRE(in.rows() == 16);
    REQUIRE(in.cols() == 1);
    REQUIRE(target.rows() == 16);
    REQUIRE(target.cols() == 1);
    for (int j = 0; j < 2; ++j) {
      // Consecutive tokens: each sequence starts where the sampler says and
      // every target is its input plus one.
      CHECK(in[size_t(8 * j)] == double(data.start(5, 2, mb, j)));
      for (size_t t = 0; t < 8; ++t) {
        CHECK(in[8 * j + t] == in[8 * j] + double(t));
        CHECK(target[8 * j + t] == in[8 * j + t] + 1);
      }
    }
    CHECK(microBatchInput<float>(batch, mb).identical(tensorCast<float>(in)));
  }
  batch.vocab = 200;
  CHECK_NOTHROW(validateBatch(batch));
  batch.vocab = 199; // the data holds id 199
  CHECK_THROWS_WITH(validateBatch(batch), Catch::Contains("outside the vocabulary of 199"));
  TokenData huge(std::vector<uint32_t>(20, 1u << 24), 8);
  batch.tokenData = &huge;
  batch.vocab = 0;
  CHECK_THROWS_WITH(validateBatch(batch), Catch::Contains("below 2^24"));
}

TEST_CASE("synthetic token-id batches are seeded, in range and shifted by one", "[runtime][loss]") {
  BatchSpec batch{/*M=*/2, /*tokens=*/12, /*hidden=*/4, /*seed=*/9};
  batch.loss = LossKind::CrossEntropy;
  batch.sequenceLength = 4;
  CHECK_THROWS_WITH(validateBatch(batch), Catch::Contains("--vocab"));
  batch.vocab = 50;
  Tensor<double> in = microBatchInput<double>(batch, 1), target = microBatchTarget<double>(batch, 1);
  REQUIRE(in.rows() == 12);
  REQUIRE(in.cols() == 1);
  bool varies = false;
  for (size_t j = 0; j < 3; ++j)
    for (size_t t = 0; t < 4; ++t) {
      CHECK(in[4 * j + t] >= 0);
      CHECK(in[4 * j + t] < 50);
      CHECK(in[4 * j + t] == std::floor(in[4 * j + t]));
      if (t + 1 < 4)
        CHECK(target[4 * j + t] == in[4 * j + t + 1]);
      varies |= in[4 * j + t] != in[0];
    }
  CHECK(varies);
  CHECK(microBatchInput<double>(batch, 1).identical(in));
  CHECK(!microBatchInput<double>(batch, 0).identical(in));
  batch.sequenceLength = 5; // 12 tokens are not whole sequences of 5
  CHECK_THROWS_AS(validateBatch(batch), std::invalid_argument);
}

TEST_CASE("the token sampler's starts are pinned (examples/nanogpt/sampler.py ports them)", "[runtime][loss]") {
  // `python3 examples/nanogpt/sampler.py` prints the same numbers: a change to
  // either side breaks the example's match with single-process PyTorch.
  TokenData data(std::vector<uint32_t>(1000, 0), /*sequenceLength=*/16);
  std::vector<size_t> starts;
  for (int64_t step : {1, 2})
    for (int mb : {0, 3})
      for (int j : {0, 1})
        starts.push_back(data.start(8, step, mb, j));
  CHECK(starts == std::vector<size_t>{59, 180, 16, 711, 839, 935, 581, 264});
}
