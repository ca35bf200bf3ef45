// The training loss, shared by the reference and the last stage of a pipeline.
// The step loss is the SUM of the per-micro-batch losses (not the mean), so the
// step's gradient is exactly the sum of the per-micro-batch gradients that the
// stages accumulate -- no 1/M rescaling anywhere in the pipeline.
//
// mse: per micro-batch, mean squared error over its b x h elements,
//   L_mb = sum (y - target)^2 / (b h),   dL_mb/dy = 2 (y - target) / (b h).
// cross-entropy (language models): the output is logits (b x vocab), the target
// the next token ids (b x 1, exact integers in T); per micro-batch the mean over
// its b tokens of -log softmax(logits)[target],
//   dL_mb/dlogits = (softmax(logits) - onehot(target)) / b,
// with the log-sum-exp taken after subtracting the row's maximum (no overflow).
#pragma once

#include "pipert/Tensor.h"

#include <string>

namespace pipert {

enum class LossKind { Mse, CrossEntropy };

// "mse" or "cross-entropy", as --loss spells them.
const char *lossName(LossKind kind);

// Accumulated in double whatever T is, so fp32 and fp64 losses compare well.
template <typename T> double mseLoss(const Tensor<T> &output, const Tensor<T> &target);
template <typename T> void mseLossGrad(const Tensor<T> &output, const Tensor<T> &target, Tensor<T> &grad);

// Throws std::invalid_argument when the target is not b x 1 or holds anything
// but an integer in [0, vocab).
template <typename T> double crossEntropyLoss(const Tensor<T> &logits, const Tensor<T> &target);
template <typename T>
void crossEntropyLossGrad(const Tensor<T> &logits, const Tensor<T> &target, Tensor<T> &grad);

// The loss of `kind` and its gradient (reshaped to the output's shape) in one
// call: what the executor's last stage and the reference both use.
template <typename T>
double lossAndGrad(LossKind kind, const Tensor<T> &output, const Tensor<T> &target, Tensor<T> &grad);
// The loss alone (forward-only evaluation).
template <typename T> double lossOnly(LossKind kind, const Tensor<T> &output, const Tensor<T> &target);

} // namespace pipert
