// Shared fixtures of the runtime tests: small stage configs (small enough for
// element-by-element finite differences), random tensors, a linear test loss,
// and central finite differences.
#pragma once

#include "pipert/Model.h"
#include "pipert/Random.h"

#include <functional>

namespace pipert::test {

constexpr int kHidden = 6;

DenseConfig smallDense(bool attention = true);
MoeConfig smallMoe(bool attention = true);
// dense, moe, dense, moe -- every kind of stage, hidden kHidden.
ModelSpec mixedModel(uint64_t seed);

template <typename T> Tensor<T> randomTensor(size_t rows, size_t cols, uint64_t seed) {
  Tensor<T> t(rows, cols);
  fillUniform(t, streamSeed(seed, -2, "test"), 1.0);
  return t;
}

// sum(y * weights): a loss whose gradient w.r.t. y is `weights`.
double dotLoss(const Tensor<double> &y, const Tensor<double> &weights);

// Forward of one throw-away micro-batch; the stage keeps no state.
Tensor<double> forwardOnce(Stage<double> &stage, const Tensor<double> &x);

// Central differences of loss() w.r.t. every element of `wrt` (restored after).
Tensor<double> numericGradient(Tensor<double> &wrt, const std::function<double()> &loss, double eps = 1e-5);

// Parameter values of a stage, by position.
template <typename T> std::vector<Tensor<T>> parameterValues(Stage<T> &stage) {
  std::vector<Tensor<T>> out;
  for (const Parameter<T> &p : stage.parameters())
    out.push_back(*p.value);
  return out;
}

} // namespace pipert::test
