// Linear<T> (see Linear.h).
#include "pipert/Linear.h"

#include "pipert/Check.h"
#include "pipert/Kernels.h"
#include "pipert/Random.h"

#include <cmath>

namespace pipert {

template <typename T>
Linear<T>::Linear(std::string name, int in, int out, bool bias)
    : name_(std::move(name)), hasBias_(bias) {
  PIPERT_CHECK(in > 0 && out > 0, name_ + " sizes " + std::to_string(in) + "x" + std::to_string(out));
  weight_.reset(static_cast<size_t>(in), static_cast<size_t>(out));
  weightGrad_.reset(static_cast<size_t>(in), static_cast<size_t>(out));
  if (hasBias_) {
    bias_.reset(1, static_cast<size_t>(out));
    biasGrad_.reset(1, static_cast<size_t>(out));
  }
}

template <typename T> void Linear<T>::init(uint64_t seed, int stageIndex) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(weight_.rows()));
  fillUniform(weight_, streamSeed(seed, stageIndex, name_ + ".weight"), bound);
  if (hasBias_)
    fillUniform(bias_, streamSeed(seed, stageIndex, name_ + ".bias"), bound);
}

template <typename T> void Linear<T>::forward(const Tensor<T> &x, Tensor<T> &y) const {
  matmul(x, weight_, y);
  if (hasBias_)
    addBias(y, bias_);
}

template <typename T> void Linear<T>::backwardInput(const Tensor<T> &dy, Tensor<T> &dx) const {
  matmulTransB(dy, weight_, dx);
}

template <typename T> void Linear<T>::accumulateWeightGrad(const Tensor<T> &x, const Tensor<T> &dy) {
  Tensor<T> delta;
  matmulTransA(x, dy, delta);
  addInPlace(weightGrad_, delta);
  if (hasBias_) {
    columnSums(dy, delta);
    addInPlace(biasGrad_, delta);
  }
}

template <typename T> void Linear<T>::appendParameters(std::vector<Parameter<T>> &out, bool expertSharded) {
  out.push_back({name_ + ".weight", &weight_, &weightGrad_, expertSharded});
  if (hasBias_)
    out.push_back({name_ + ".bias", &bias_, &biasGrad_, expertSharded});
}

template class Linear<float>;
template class Linear<double>;

} // namespace pipert
