// DenseStage<T> (see DenseStage.h): the four forward and four backward parts.
#include "pipert/DenseStage.h"

#include "pipert/Kernels.h"

#include <stdexcept>

namespace pipert {

namespace {
const DenseConfig &validated(const DenseConfig &c, const StageInit &init) {
  const std::string where = "dense stage " + std::to_string(init.stageIndex) + ": ";
  if (c.hidden <= 0)
    throw std::invalid_argument(where + "hidden size must be positive, got " + std::to_string(c.hidden));
  if (c.ffnHidden <= 0)
    throw std::invalid_argument(where + "ffnHidden must be positive, got " + std::to_string(c.ffnHidden));
  return c;
}
} // namespace

template <typename T>
DenseStage<T>::DenseStage(const DenseConfig &config, StageInit init)
    : Stage<T>("dense", validated(config, init).hidden, init), config_(config),
      attention_(config.hidden, config.attention), mlp_("mlp", config.hidden, config.ffnHidden) {
  attention_.init(init.seed, init.stageIndex);
  mlp_.init(init.seed, init.stageIndex);
}

template <typename T> std::string DenseStage<T>::describe() const {
  return "dense(hidden=" + std::to_string(config_.hidden) + ", ffn=" + std::to_string(config_.ffnHidden) +
         (config_.attention ? ", attention)" : ", no attention)");
}

template <typename T> std::vector<Parameter<T>> DenseStage<T>::parameters() {
  std::vector<Parameter<T>> out;
  attention_.appendParameters(out);
  mlp_.appendParameters(out, false);
  return out;
}

template <typename T>
void DenseStage<T>::runForwardPart(int mb, SubOp part, const Tensor<T> &input, Tensor<T> &output) {
  Saved &s = saved_[mb];
  switch (part) {
  case SubOp::Attention:
    attention_.forward(input, s.a, s.attention);
    break;
  case SubOp::Dispatch: // no all-to-all in a dense stage
    break;
  case SubOp::Mlp:
    mlp_.forward(s.a, s.m, s.mlp);
    break;
  case SubOp::Combine:
    output = s.a;
    addInPlace(output, s.m);
    s.a.release();
    s.m.release();
    break;
  }
}

template <typename T>
void DenseStage<T>::runBackwardPart(int mb, SubOp part, const Tensor<T> &gradOutput, Tensor<T> &gradInput,
                                    WeightGrad when) {
  Saved &s = saved_.at(mb);
  switch (part) {
  case SubOp::Combine:
    s.da = gradOutput; // the residual branch; the MLP branch is added next
    break;
  case SubOp::Mlp: {
    Tensor<T> dmlp;
    mlp_.backwardInput(s.da, dmlp, s.mlp); // s.da is still dy here
    addInPlace(s.da, dmlp);
    if (when == WeightGrad::Now)
      mlp_.backwardWeight(s.mlp);
    break;
  }
  case SubOp::Dispatch:
    break;
  case SubOp::Attention:
    attention_.backwardInput(s.da, gradInput, s.attention);
    s.da.release();
    if (when == WeightGrad::Now)
      attention_.backwardWeight(s.attention);
    break;
  }
}

template <typename T> void DenseStage<T>::runBackwardWeight(int mb) {
  Saved &s = saved_.at(mb);
  mlp_.backwardWeight(s.mlp);
  attention_.backwardWeight(s.attention);
}

template class DenseStage<float>;
template class DenseStage<double>;

} // namespace pipert
