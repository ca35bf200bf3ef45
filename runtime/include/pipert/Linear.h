// Linear<T>: y = x W (+ b), the building block of every layer. Split the way a
// zero-bubble schedule needs it: backwardInput (dx = dy W^T) is separate from
// accumulateWeightGrad (dW += x^T dy, db += colsum(dy)), so the caller decides
// when the weight half runs and what it keeps for it. Stateless across
// micro-batches: the caller stores x and dy.
#pragma once

#include "pipert/Parameter.h"
#include "pipert/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pipert {

template <typename T>
class Linear {
public:
  // `name` prefixes the parameter names ("<name>.weight", "<name>.bias") and
  // selects the random streams of the initialization.
  Linear(std::string name, int in, int out, bool bias);

  // PyTorch's nn.Linear scheme: uniform in +-1/sqrt(in), for weight and bias.
  void init(uint64_t seed, int stageIndex);

  void forward(const Tensor<T> &x, Tensor<T> &y) const;
  void backwardInput(const Tensor<T> &dy, Tensor<T> &dx) const;
  // Computes this micro-batch's gradient in full, then adds it in one step, so
  // the accumulated value does not depend on when the W half runs.
  void accumulateWeightGrad(const Tensor<T> &x, const Tensor<T> &dy);

  void appendParameters(std::vector<Parameter<T>> &out, bool expertSharded);

private:
  std::string name_;
  bool hasBias_;
  Tensor<T> weight_, bias_, weightGrad_, biasGrad_;
};

extern template class Linear<float>;
extern template class Linear<double>;

} // namespace pipert
