// The numerical kernels the built-in stages need, as plain loops over Tensor<T>
// (T = float or double; explicitly instantiated in Kernels.cpp). Correctness and
// determinism over speed: every kernel accumulates in a fixed order, and each
// output row depends only on the matching input rows, so a token's result does
// not depend on which other tokens share its matrix (expert parallelism relies
// on this). Outputs are resized by the kernel; shape mismatches are internal
// bugs and throw std::logic_error.
#pragma once

#include "pipert/Tensor.h"

#include <vector>

namespace pipert {

// c = a * b           (a: m x k, b: k x n)
template <typename T> void matmul(const Tensor<T> &a, const Tensor<T> &b, Tensor<T> &c);
// c = transpose(a) * b (a: k x m, b: k x n) -- weight gradients X^T dY
template <typename T> void matmulTransA(const Tensor<T> &a, const Tensor<T> &b, Tensor<T> &c);
// c = a * transpose(b) (a: m x k, b: n x k) -- input gradients dY W^T
template <typename T> void matmulTransB(const Tensor<T> &a, const Tensor<T> &b, Tensor<T> &c);

// Every row of c += bias (bias: 1 x cols).
template <typename T> void addBias(Tensor<T> &c, const Tensor<T> &bias);
// out (1 x cols) = sum over rows of a -- bias gradients.
template <typename T> void columnSums(const Tensor<T> &a, Tensor<T> &out);
// acc += x (same shape).
template <typename T> void addInPlace(Tensor<T> &acc, const Tensor<T> &x);

// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <typename T> T geluScalar(T x);
template <typename T> T geluDerivative(T x);
template <typename T> void gelu(const Tensor<T> &x, Tensor<T> &y);
// dx = dy * gelu'(x), element-wise.
template <typename T> void geluBackward(const Tensor<T> &x, const Tensor<T> &dy, Tensor<T> &dx);

// Row-wise softmax. Entries equal to -infinity (masked) get probability 0; every
// row needs at least one finite entry.
template <typename T> void softmaxRows(const Tensor<T> &logits, Tensor<T> &probs);
// ds = p * (dp - rowsum(dp * p)): the gradient of the logits of softmaxRows.
template <typename T> void softmaxRowsBackward(const Tensor<T> &p, const Tensor<T> &dp, Tensor<T> &ds);

// Indices of the k largest of values[0..n), largest first; ties go to the lower
// index, so the selection is deterministic.
template <typename T> std::vector<int> topK(const T *values, int n, int k);

} // namespace pipert
