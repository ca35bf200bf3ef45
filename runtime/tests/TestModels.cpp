// Shared fixtures of the runtime tests (see TestModels.h).
#include "TestModels.h"

namespace pipert::test {

DenseConfig smallDense(bool attention) {
  DenseConfig c;
  c.hidden = kHidden;
  c.ffnHidden = 4 * kHidden;
  c.attention = attention;
  return c;
}

MoeConfig smallMoe(bool attention) {
  MoeConfig c;
  c.hidden = kHidden;
  c.expertHidden = 8;
  c.experts = 4;
  c.topK = 2;
  c.attention = attention;
  return c;
}

ModelSpec mixedModel(uint64_t seed) {
  ModelSpec model;
  model.seed = seed;
  StageSpec dense, moe;
  dense.kind = StageKind::Dense;
  dense.dense = smallDense();
  moe.kind = StageKind::Moe;
  moe.moe = smallMoe();
  model.stages = {dense, moe, dense, moe};
  return model;
}

double dotLoss(const Tensor<double> &y, const Tensor<double> &weights) {
  double sum = 0;
  for (size_t i = 0; i < y.size(); ++i)
    sum += y[i] * weights[i];
  return sum;
}

Tensor<double> forwardOnce(Stage<double> &stage, const Tensor<double> &x) {
  constexpr int kScratchMicroBatch = 1 << 30;
  Tensor<double> y;
  stage.forward(kScratchMicroBatch, x, y);
  stage.discard(kScratchMicroBatch);
  return y;
}

Tensor<double> numericGradient(Tensor<double> &wrt, const std::function<double()> &loss, double eps) {
  Tensor<double> grad(wrt.rows(), wrt.cols());
  for (size_t i = 0; i < wrt.size(); ++i) {
    const double saved = wrt[i];
    wrt[i] = saved + eps;
    const double plus = loss();
    wrt[i] = saved - eps;
    const double minus = loss();
    wrt[i] = saved;
    grad[i] = (plus - minus) / (2 * eps);
  }
  return grad;
}

} // namespace pipert::test
