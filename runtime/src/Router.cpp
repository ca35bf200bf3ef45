// Router<T> (see Router.h for the maths of the gate and its backward).
#include "pipert/Router.h"

#include "pipert/Check.h"
#include "pipert/Kernels.h"

namespace pipert {

template <typename T>
Router<T>::Router(int hidden, int experts, int topK)
    : experts_(experts), topK_(topK), gate_("router.gate", hidden, experts, false) {}

template <typename T> void Router<T>::init(uint64_t seed, int stageIndex) { gate_.init(seed, stageIndex); }

template <typename T> void Router<T>::route(const Tensor<T> &x, RouterSaved<T> &saved) const {
  Tensor<T> logits, probs;
  gate_.forward(x, logits);
  softmaxRows(logits, probs);
  const size_t tokens = x.rows(), k = static_cast<size_t>(topK_);
  saved.x = x;
  saved.experts.assign(tokens * k, 0);
  saved.gates.reset(tokens, k);
  for (size_t t = 0; t < tokens; ++t) {
    const std::vector<int> chosen = pipert::topK(probs.row(t), experts_, topK_);
    T sum = T(0);
    for (size_t j = 0; j < k; ++j)
      sum += probs(t, static_cast<size_t>(chosen[j]));
    for (size_t j = 0; j < k; ++j) {
      saved.experts[t * k + j] = chosen[j];
      saved.gates(t, j) = probs(t, static_cast<size_t>(chosen[j])) / sum;
    }
  }
}

template <typename T>
void Router<T>::backwardInput(const Tensor<T> &dGates, Tensor<T> &dx, RouterSaved<T> &saved) const {
  PIPERT_CHECK(dGates.sameShape(saved.gates), "router gate gradient " + dGates.shapeString());
  const size_t tokens = saved.gates.rows(), k = saved.gates.cols();
  saved.dz.reset(tokens, static_cast<size_t>(experts_));
  for (size_t t = 0; t < tokens; ++t) {
    T dot = T(0);
    for (size_t j = 0; j < k; ++j)
      dot += saved.gates(t, j) * dGates(t, j);
    for (size_t j = 0; j < k; ++j)
      saved.dz(t, static_cast<size_t>(saved.experts[t * k + j])) = saved.gates(t, j) * (dGates(t, j) - dot);
  }
  Tensor<T> term;
  gate_.backwardInput(saved.dz, term);
  addInPlace(dx, term);
}

template <typename T> void Router<T>::backwardWeight(RouterSaved<T> &saved) {
  gate_.accumulateWeightGrad(saved.x, saved.dz);
  saved = RouterSaved<T>();
}

template <typename T> void Router<T>::appendParameters(std::vector<Parameter<T>> &out) {
  gate_.appendParameters(out, false);
}

template class Router<float>;
template class Router<double>;

} // namespace pipert
