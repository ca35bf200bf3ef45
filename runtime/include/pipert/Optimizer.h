// The optimizer step a training run takes after gradient sync: SGD (optional
// momentum) or AdamW (bias-corrected moments, weight decay decoupled from the
// gradient), with optional clipping by the global gradient norm.
//
// Every parameter copy holds its own optimizer state and steps on its own: two
// copies with identical values and (summed) gradients take bit-identical steps.
// The global norm is computed once per step, by gradientSquares() over each
// distinct parameter (in stage, parameter, element order, in double), and its
// clip factor handed to every copy, so every rank scales by the same number.
#pragma once

#include "pipert/Parameter.h"

#include <cstdint>
#include <string>
#include <vector>

namespace pipert {

enum class OptimizerKind { Sgd, AdamW };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::Sgd;
  double lr = 0.01;
  double momentum = 0;    // SGD only; 0: plain SGD
  double weightDecay = 0; // SGD: added to the gradient; AdamW: decoupled, lr * wd * w
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8; // AdamW
  double clipGradNorm = 0; // 0: no clipping
};

// The state of one parameter: SGD momentum buffer, or AdamW's two moments.
template <typename T>
struct ParameterState {
  Tensor<T> first, second;
};

// One stage copy's state, parallel to Stage::parameters().
template <typename T>
struct StageOptimizerState {
  std::vector<ParameterState<T>> parameters;
};

// Sum of squared gradient elements of `params`, in order, accumulated in double.
template <typename T> double gradientSquares(const std::vector<Parameter<T>> &params);

// The factor gradients are multiplied by before the step: min(1, max / norm);
// 1 when clipping is off or the norm is zero.
double clipFactor(const OptimizerConfig &config, double globalNorm);

// Steps `params` in place; `step` counts from 1 (AdamW's bias correction).
// `state` is sized on the first call. Throws std::invalid_argument if `state`
// does not match the parameters' shapes.
template <typename T>
void optimizerStep(const OptimizerConfig &config, int64_t step, double gradScale,
                   std::vector<Parameter<T>> &params, StageOptimizerState<T> &state);

// Empty when `config` is valid, else what is wrong, naming the option.
std::string validateOptimizer(const OptimizerConfig &config);

} // namespace pipert
