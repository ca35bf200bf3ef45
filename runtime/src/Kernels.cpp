// Plain-loop implementations of Kernels.h, instantiated for float and double.
// Loops run in i-k-j order so the inner loop is contiguous; each output element
// is accumulated in ascending k, which makes results reproducible bit for bit.
#include "pipert/Kernels.h"

#include "pipert/Check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

// Output rows never alias input rows; saying so lets the compiler vectorize
// the inner loops at -O2 (a 2-3x speed-up; the arithmetic order is unchanged).
#define PIPERT_RESTRICT __restrict__

namespace pipert {

template <typename T> void matmul(const Tensor<T> &a, const Tensor<T> &b, Tensor<T> &c) {
  PIPERT_CHECK(a.cols() == b.rows(), "matmul " + a.shapeString() + " * " + b.shapeString());
  PIPERT_CHECK(&c != &a && &c != &b, "matmul output aliases an input");
  c.reset(a.rows(), b.cols());
  const size_t n = b.cols();
  for (size_t i = 0; i < a.rows(); ++i) {
    T *PIPERT_RESTRICT out = c.row(i);
    for (size_t k = 0; k < a.cols(); ++k) {
      const T aik = a(i, k);
      const T *PIPERT_RESTRICT brow = b.row(k);
      for (size_t j = 0; j < n; ++j)
        out[j] += aik * brow[j];
    }
  }
}

template <typename T> void matmulTransA(const Tensor<T> &a, const Tensor<T> &b, Tensor<T> &c) {
  PIPERT_CHECK(a.rows() == b.rows(), "matmulTransA " + a.shapeString() + "^T * " + b.shapeString());
  PIPERT_CHECK(&c != &a && &c != &b, "matmulTransA output aliases an input");
  c.reset(a.cols(), b.cols());
  const size_t n = b.cols();
  for (size_t r = 0; r < a.rows(); ++r) {
    const T *arow = a.row(r);
    const T *PIPERT_RESTRICT brow = b.row(r);
    for (size_t i = 0; i < a.cols(); ++i) {
      const T ari = arow[i];
      T *PIPERT_RESTRICT out = c.row(i);
      for (size_t j = 0; j < n; ++j)
        out[j] += ari * brow[j];
    }
  }
}

// Via an explicit transpose so the inner loop runs over contiguous columns
// (a dot-product loop would not vectorize); each element still sums k in
// ascending order from zero, so the result is the same as the dot product's.
template <typename T> void matmulTransB(const Tensor<T> &a, const Tensor<T> &b, Tensor<T> &c) {
  PIPERT_CHECK(a.cols() == b.cols(), "matmulTransB " + a.shapeString() + " * " + b.shapeString() + "^T");
  Tensor<T> bt(b.cols(), b.rows());
  for (size_t j = 0; j < b.rows(); ++j)
    for (size_t k = 0; k < b.cols(); ++k)
      bt(k, j) = b(j, k);
  matmul(a, bt, c);
}

template <typename T> void addBias(Tensor<T> &c, const Tensor<T> &bias) {
  PIPERT_CHECK(bias.rows() == 1 && bias.cols() == c.cols(), "bias " + bias.shapeString() + " for " + c.shapeString());
  for (size_t i = 0; i < c.rows(); ++i) {
    T *out = c.row(i);
    for (size_t j = 0; j < c.cols(); ++j)
      out[j] += bias[j];
  }
}

template <typename T> void columnSums(const Tensor<T> &a, Tensor<T> &out) {
  out.reset(1, a.cols());
  for (size_t i = 0; i < a.rows(); ++i) {
    const T *arow = a.row(i);
    for (size_t j = 0; j < a.cols(); ++j)
      out[j] += arow[j];
  }
}

template <typename T> void addInPlace(Tensor<T> &acc, const Tensor<T> &x) {
  PIPERT_CHECK(acc.sameShape(x), "addInPlace " + acc.shapeString() + " += " + x.shapeString());
  for (size_t i = 0; i < acc.size(); ++i)
    acc[i] += x[i];
}

namespace {
constexpr double kGeluC = 0.7978845608028654; // sqrt(2 / pi)
constexpr double kGeluA = 0.044715;
} // namespace

template <typename T> T geluScalar(T x) {
  const T inner = T(kGeluC) * (x + T(kGeluA) * x * x * x);
  return T(0.5) * x * (T(1) + std::tanh(inner));
}

template <typename T> T geluDerivative(T x) {
  const T inner = T(kGeluC) * (x + T(kGeluA) * x * x * x);
  const T t = std::tanh(inner);
  const T dInner = T(kGeluC) * (T(1) + T(3 * kGeluA) * x * x);
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * dInner;
}

template <typename T> void gelu(const Tensor<T> &x, Tensor<T> &y) {
  y.reset(x.rows(), x.cols());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = geluScalar(x[i]);
}

template <typename T> void geluBackward(const Tensor<T> &x, const Tensor<T> &dy, Tensor<T> &dx) {
  PIPERT_CHECK(x.sameShape(dy), "geluBackward " + x.shapeString() + " vs " + dy.shapeString());
  dx.reset(x.rows(), x.cols());
  for (size_t i = 0; i < x.size(); ++i)
    dx[i] = dy[i] * geluDerivative(x[i]);
}

template <typename T> void softmaxRows(const Tensor<T> &logits, Tensor<T> &probs) {
  probs.reset(logits.rows(), logits.cols());
  for (size_t i = 0; i < logits.rows(); ++i) {
    const T *in = logits.row(i);
    T *out = probs.row(i);
    T maxValue = -std::numeric_limits<T>::infinity();
    for (size_t j = 0; j < logits.cols(); ++j)
      maxValue = std::max(maxValue, in[j]);
    PIPERT_CHECK(std::isfinite(maxValue), "softmax row " + std::to_string(i) + " has no finite entry");
    T sum = T(0);
    for (size_t j = 0; j < logits.cols(); ++j) {
      out[j] = std::isinf(in[j]) && in[j] < 0 ? T(0) : std::exp(in[j] - maxValue);
      sum += out[j];
    }
    for (size_t j = 0; j < logits.cols(); ++j)
      out[j] /= sum;
  }
}

template <typename T> void softmaxRowsBackward(const Tensor<T> &p, const Tensor<T> &dp, Tensor<T> &ds) {
  PIPERT_CHECK(p.sameShape(dp), "softmaxRowsBackward " + p.shapeString() + " vs " + dp.shapeString());
  ds.reset(p.rows(), p.cols());
  for (size_t i = 0; i < p.rows(); ++i) {
    T dot = T(0);
    for (size_t j = 0; j < p.cols(); ++j)
      dot += p(i, j) * dp(i, j);
    for (size_t j = 0; j < p.cols(); ++j)
      ds(i, j) = p(i, j) * (dp(i, j) - dot);
  }
}

template <typename T> std::vector<int> topK(const T *values, int n, int k) {
  PIPERT_CHECK(k >= 0 && k <= n, "topK k=" + std::to_string(k) + " of n=" + std::to_string(n));
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return values[a] > values[b]; });
  order.resize(static_cast<size_t>(k));
  return order;
}

#define PIPERT_INSTANTIATE_KERNELS(T)                                                              \
  template void matmul<T>(const Tensor<T> &, const Tensor<T> &, Tensor<T> &);                      \
  template void matmulTransA<T>(const Tensor<T> &, const Tensor<T> &, Tensor<T> &);                \
  template void matmulTransB<T>(const Tensor<T> &, const Tensor<T> &, Tensor<T> &);                \
  template void addBias<T>(Tensor<T> &, const Tensor<T> &);                                        \
  template void columnSums<T>(const Tensor<T> &, Tensor<T> &);                                     \
  template void addInPlace<T>(Tensor<T> &, const Tensor<T> &);                                     \
  template T geluScalar<T>(T);                                                                     \
  template T geluDerivative<T>(T);                                                                 \
  template void gelu<T>(const Tensor<T> &, Tensor<T> &);                                           \
  template void geluBackward<T>(const Tensor<T> &, const Tensor<T> &, Tensor<T> &);                \
  template void softmaxRows<T>(const Tensor<T> &, Tensor<T> &);                                    \
  template void softmaxRowsBackward<T>(const Tensor<T> &, const Tensor<T> &, Tensor<T> &);         \
  template std::vector<int> topK<T>(const T *, int, int);

PIPERT_INSTANTIATE_KERNELS(float)
PIPERT_INSTANTIATE_KERNELS(double)

} // namespace pipert
