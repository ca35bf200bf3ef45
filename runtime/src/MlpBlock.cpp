// MlpBlock<T> (see MlpBlock.h).
#include "pipert/MlpBlock.h"

#include "pipert/Kernels.h"

namespace pipert {

template <typename T>
MlpBlock<T>::MlpBlock(const std::string &name, int hidden, int ffnHidden)
    : fc1_(name + ".fc1", hidden, ffnHidden, true), fc2_(name + ".fc2", ffnHidden, hidden, true) {}

template <typename T> void MlpBlock<T>::init(uint64_t seed, int stageIndex) {
  fc1_.init(seed, stageIndex);
  fc2_.init(seed, stageIndex);
}

template <typename T> void MlpBlock<T>::forward(Tensor<T> x, Tensor<T> &m, MlpSaved<T> &saved) const {
  fc1_.forward(x, saved.u);
  gelu(saved.u, saved.v);
  fc2_.forward(saved.v, m);
  saved.x = std::move(x);
}

template <typename T>
void MlpBlock<T>::backwardInput(const Tensor<T> &dm, Tensor<T> &dx, MlpSaved<T> &saved) const {
  saved.dm = dm;
  Tensor<T> dv;
  fc2_.backwardInput(dm, dv);
  geluBackward(saved.u, dv, saved.du);
  fc1_.backwardInput(saved.du, dx);
  saved.u.release();
}

template <typename T> void MlpBlock<T>::backwardWeight(MlpSaved<T> &saved) {
  fc2_.accumulateWeightGrad(saved.v, saved.dm);
  fc1_.accumulateWeightGrad(saved.x, saved.du);
  saved = MlpSaved<T>();
}

template <typename T> void MlpBlock<T>::appendParameters(std::vector<Parameter<T>> &out, bool expertSharded) {
  fc1_.appendParameters(out, expertSharded);
  fc2_.appendParameters(out, expertSharded);
}

template class MlpBlock<float>;
template class MlpBlock<double>;

} // namespace pipert
