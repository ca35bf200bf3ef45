// Mean squared error and its gradient (see Loss.h).
#include "pipert/Loss.h"

#include "pipert/Check.h"

namespace pipert {

template <typename T> double mseLoss(const Tensor<T> &output, const Tensor<T> &target) {
  PIPERT_CHECK(output.sameShape(target) && output.size() > 0, "loss " + output.shapeString() + " vs " + target.shapeString());
  double sum = 0;
  for (size_t i = 0; i < output.size(); ++i) {
    const double d = static_cast<double>(output[i]) - static_cast<double>(target[i]);
    sum += d * d;
  }
  return sum / static_cast<double>(output.size());
}

template <typename T> void mseLossGrad(const Tensor<T> &output, const Tensor<T> &target, Tensor<T> &grad) {
  PIPERT_CHECK(output.sameShape(target) && output.size() > 0, "loss " + output.shapeString() + " vs " + target.shapeString());
  grad.reset(output.rows(), output.cols());
  const T scale = static_cast<T>(2.0 / static_cast<double>(output.size()));
  for (size_t i = 0; i < output.size(); ++i)
    grad[i] = scale * (output[i] - target[i]);
}

template double mseLoss<float>(const Tensor<float> &, const Tensor<float> &);
template double mseLoss<double>(const Tensor<double> &, const Tensor<double> &);
template void mseLossGrad<float>(const Tensor<float> &, const Tensor<float> &, Tensor<float> &);
template void mseLossGrad<double>(const Tensor<double> &, const Tensor<double> &, Tensor<double> &);

} // namespace pipert
