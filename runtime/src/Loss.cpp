// Mean squared error, cross-entropy and their gradients (see Loss.h).
#include "pipert/Loss.h"

#include "pipert/Check.h"

#include <cmath>
#include <stdexcept>

namespace pipert {

const char *lossName(LossKind kind) { return kind == LossKind::Mse ? "mse" : "cross-entropy"; }

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

// Row r's target id, checked: a bad id is the caller's data, not a crash.
template <typename T> static size_t targetId(const Tensor<T> &logits, const Tensor<T> &target, size_t r) {
  const double id = static_cast<double>(target(r, 0));
  if (!(id >= 0) || id != std::floor(id) || id >= static_cast<double>(logits.cols()))
    throw std::invalid_argument("cross-entropy: target token " + std::to_string(id) + " of row " +
                                std::to_string(r) + " is not a token id below the vocabulary of " +
                                std::to_string(logits.cols()));
  return static_cast<size_t>(id);
}

template <typename T> static void checkCrossEntropyShapes(const Tensor<T> &logits, const Tensor<T> &target) {
  if (logits.rows() == 0 || logits.cols() == 0 || target.rows() != logits.rows() || target.cols() != 1)
    throw std::invalid_argument("cross-entropy: logits " + logits.shapeString() + " and targets " +
                                target.shapeString() + " (expected tokens x vocab and tokens x 1)");
}

// Row r's maximum and log of sum exp(x - max), in double.
template <typename T> static void logSumExp(const T *row, size_t n, double &max, double &logSum) {
  max = static_cast<double>(row[0]);
  for (size_t c = 1; c < n; ++c)
    max = std::max(max, static_cast<double>(row[c]));
  double sum = 0;
  for (size_t c = 0; c < n; ++c)
    sum += std::exp(static_cast<double>(row[c]) - max);
  logSum = std::log(sum);
}

template <typename T> double crossEntropyLoss(const Tensor<T> &logits, const Tensor<T> &target) {
  checkCrossEntropyShapes(logits, target);
  double total = 0;
  for (size_t r = 0; r < logits.rows(); ++r) {
    const size_t id = targetId(logits, target, r);
    double max, logSum;
    logSumExp(logits.row(r), logits.cols(), max, logSum);
    total += max + logSum - static_cast<double>(logits(r, id));
  }
  return total / static_cast<double>(logits.rows());
}

template <typename T>
void crossEntropyLossGrad(const Tensor<T> &logits, const Tensor<T> &target, Tensor<T> &grad) {
  checkCrossEntropyShapes(logits, target);
  grad.reset(logits.rows(), logits.cols());
  const double scale = 1.0 / static_cast<double>(logits.rows());
  for (size_t r = 0; r < logits.rows(); ++r) {
    const size_t id = targetId(logits, target, r);
    double max, logSum;
    logSumExp(logits.row(r), logits.cols(), max, logSum);
    for (size_t c = 0; c < logits.cols(); ++c) {
      const double p = std::exp(static_cast<double>(logits(r, c)) - max - logSum);
      grad(r, c) = static_cast<T>(scale * (p - (c == id ? 1.0 : 0.0)));
    }
  }
}

template <typename T>
double lossAndGrad(LossKind kind, const Tensor<T> &output, const Tensor<T> &target, Tensor<T> &grad) {
  if (kind == LossKind::CrossEntropy) {
    crossEntropyLossGrad(output, target, grad);
    return crossEntropyLoss(output, target);
  }
  mseLossGrad(output, target, grad);
  return mseLoss(output, target);
}

template <typename T> double lossOnly(LossKind kind, const Tensor<T> &output, const Tensor<T> &target) {
  return kind == LossKind::CrossEntropy ? crossEntropyLoss(output, target) : mseLoss(output, target);
}

#define PIPERT_LOSS_INSTANTIATE(T)                                                                     \
  template double mseLoss<T>(const Tensor<T> &, const Tensor<T> &);                                  \
  template void mseLossGrad<T>(const Tensor<T> &, const Tensor<T> &, Tensor<T> &);                  \
  template double crossEntropyLoss<T>(const Tensor<T> &, const Tensor<T> &);                         \
  template void crossEntropyLossGrad<T>(const Tensor<T> &, const Tensor<T> &, Tensor<T> &);         \
  template double lossAndGrad<T>(LossKind, const Tensor<T> &, const Tensor<T> &, Tensor<T> &);      \
  template double lossOnly<T>(LossKind, const Tensor<T> &, const Tensor<T> &);
PIPERT_LOSS_INSTANTIATE(float)
PIPERT_LOSS_INSTANTIATE(double)

} // namespace pipert
