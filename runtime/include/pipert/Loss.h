// The training loss, shared by the reference and the last stage of a pipeline.
// Per micro-batch: mean squared error over its b x h elements,
//   L_mb = sum (y - target)^2 / (b h),   dL_mb/dy = 2 (y - target) / (b h).
// The step loss is the SUM over micro-batches (not the mean), so the step's
// gradient is exactly the sum of the per-micro-batch gradients that the stages
// accumulate -- no 1/M rescaling anywhere in the pipeline.
#pragma once

#include "pipert/Tensor.h"

namespace pipert {

// Accumulated in double whatever T is, so fp32 and fp64 losses compare well.
template <typename T> double mseLoss(const Tensor<T> &output, const Tensor<T> &target);
template <typename T> void mseLossGrad(const Tensor<T> &output, const Tensor<T> &target, Tensor<T> &grad);

} // namespace pipert
