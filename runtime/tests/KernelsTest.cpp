// The kernels against naive definitions: the three matmul forms, bias and
// column sums, GELU and its derivative, masked softmax and its backward, top-k.
#include "TestModels.h"

#include "pipert/Gradients.h"
#include "pipert/Kernels.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace pipert;
using namespace pipert::test;

namespace {
Tensor<double> transpose(const Tensor<double> &a) {
  Tensor<double> t(a.cols(), a.rows());
  for (size_t i = 0; i < a.rows(); ++i)
    for (size_t j = 0; j < a.cols(); ++j)
      t(j, i) = a(i, j);
  return t;
}

Tensor<double> naiveMatmul(const Tensor<double> &a, const Tensor<double> &b) {
  Tensor<double> c(a.rows(), b.cols());
  for (size_t i = 0; i < a.rows(); ++i)
    for (size_t j = 0; j < b.cols(); ++j)
      for (size_t k = 0; k < a.cols(); ++k)
        c(i, j) += a(i, k) * b(k, j);
  return c;
}
} // namespace

TEST_CASE("matmul and its transposed forms", "[runtime]") {
  const Tensor<double> a = randomTensor<double>(3, 4, 1), b = randomTensor<double>(4, 5, 2);
  const Tensor<double> expected = naiveMatmul(a, b);
  Tensor<double> c;
  matmul(a, b, c);
  CHECK(relativeError(expected, c) < 1e-15);
  matmulTransA(transpose(a), b, c);
  CHECK(relativeError(expected, c) < 1e-15);
  matmulTransB(a, transpose(b), c);
  CHECK(relativeError(expected, c) < 1e-15);
  CHECK_THROWS_AS(matmul(a, a, c), std::logic_error);

  Tensor<double> empty(0, 4); // an expert that received no tokens
  matmul(empty, b, c);
  CHECK((c.rows() == 0 && c.cols() == 5));
}

TEST_CASE("bias, column sums, accumulation", "[runtime]") {
  Tensor<double> c(2, 3, 1.0), bias(1, 3), sums;
  bias[0] = 1;
  bias[1] = 2;
  bias[2] = 3;
  addBias(c, bias);
  CHECK(c(1, 2) == 4.0);
  columnSums(c, sums);
  CHECK((sums.rows() == 1 && sums[0] == 4.0 && sums[2] == 8.0));
  addInPlace(c, c);
  CHECK(c(0, 1) == 6.0);
}

TEST_CASE("GELU (tanh approximation) and its derivative", "[runtime]") {
  CHECK(geluScalar(0.0) == 0.0);
  CHECK(geluScalar(1.0) == Approx(0.8411919906082768).epsilon(1e-15));
  CHECK(geluScalar(-2.0) == Approx(-0.04540230591222).epsilon(1e-12));
  for (double x : {-3.0, -1.0, -0.2, 0.0, 0.5, 2.5}) {
    const double eps = 1e-6;
    const double fd = (geluScalar(x + eps) - geluScalar(x - eps)) / (2 * eps);
    CHECK(geluDerivative(x) == Approx(fd).epsilon(1e-8));
  }
}

TEST_CASE("softmax rows with masked entries, and its backward", "[runtime]") {
  Tensor<double> s = randomTensor<double>(3, 4, 7), p;
  s(0, 3) = -std::numeric_limits<double>::infinity();
  softmaxRows(s, p);
  CHECK(p(0, 3) == 0.0);
  for (size_t i = 0; i < 3; ++i) {
    double sum = 0;
    for (size_t j = 0; j < 4; ++j)
      sum += p(i, j);
    CHECK(sum == Approx(1.0).epsilon(1e-15));
  }
  // Backward against finite differences of sum(p * w).
  const Tensor<double> w = randomTensor<double>(3, 4, 8);
  Tensor<double> ds, logits = randomTensor<double>(3, 4, 7);
  softmaxRows(logits, p);
  softmaxRowsBackward(p, w, ds);
  auto loss = [&] {
    Tensor<double> q;
    softmaxRows(logits, q);
    return dotLoss(q, w);
  };
  CHECK(relativeError(numericGradient(logits, loss), ds) < 1e-8);

  Tensor<double> allMasked(1, 2, -std::numeric_limits<double>::infinity());
  CHECK_THROWS_AS(softmaxRows(allMasked, p), std::logic_error);
}

TEST_CASE("top-k: largest first, ties to the lower index", "[runtime]") {
  const double v[] = {0.1, 0.4, 0.2, 0.4, 0.3};
  CHECK(topK(v, 5, 2) == std::vector<int>{1, 3});
  CHECK(topK(v, 5, 3) == std::vector<int>{1, 3, 4});
  CHECK(topK(v, 5, 0).empty());
  CHECK_THROWS_AS(topK(v, 5, 6), std::logic_error);
}
