// MlpBlock<T>: Linear(h, f) -> GELU -> Linear(f, h), without the residual (the
// stage adds it). The dense stage's MLP and every MoE expert. What one
// micro-batch keeps lives in MlpSaved, owned by the stage, so a block serves any
// number of micro-batches in flight.
#pragma once

#include "pipert/Linear.h"

#include <vector>

namespace pipert {

template <typename T>
struct MlpSaved {
  Tensor<T> x, u, v; // input, pre-activation, GELU(u)
  Tensor<T> dm, du;  // output gradient and pre-activation gradient, for W
  // Every tensor above, in order (what an offload moves, Stage::storedTensors).
  void list(std::vector<Tensor<T> *> &out) {
    for (Tensor<T> *t : {&x, &u, &v, &dm, &du})
      out.push_back(t);
  }
};

template <typename T>
class MlpBlock {
public:
  MlpBlock(const std::string &name, int hidden, int ffnHidden);
  void init(uint64_t seed, int stageIndex);

  // m = fc2(gelu(fc1(x))); takes x by value to keep it without a copy.
  void forward(Tensor<T> x, Tensor<T> &m, MlpSaved<T> &saved) const;
  // dx from dm; keeps dm and du for backwardWeight, frees u.
  void backwardInput(const Tensor<T> &dm, Tensor<T> &dx, MlpSaved<T> &saved) const;
  // Accumulates fc1/fc2 gradients and frees everything saved.
  void backwardWeight(MlpSaved<T> &saved);

  void appendParameters(std::vector<Parameter<T>> &out, bool expertSharded);

private:
  Linear<T> fc1_, fc2_;
};

extern template class MlpBlock<float>;
extern template class MlpBlock<double>;

} // namespace pipert
