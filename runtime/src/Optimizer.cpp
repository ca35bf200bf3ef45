// SGD and AdamW (see Optimizer.h). Arithmetic in double per element, rounded
// to T once at the end, so fp32 and fp64 runs differ only by that rounding.
#include "pipert/Optimizer.h"

#include <cmath>
#include <stdexcept>

namespace pipert {

template <typename T> double gradientSquares(const std::vector<Parameter<T>> &params) {
  double sum = 0;
  for (const Parameter<T> &p : params)
    for (size_t e = 0; e < p.grad->size(); ++e) {
      double g = (*p.grad)[e];
      sum += g * g;
    }
  return sum;
}

double clipFactor(const OptimizerConfig &config, double globalNorm) {
  if (config.clipGradNorm <= 0 || !(globalNorm > config.clipGradNorm))
    return 1.0;
  return config.clipGradNorm / globalNorm;
}

template <typename T>
void optimizerStep(const OptimizerConfig &config, int64_t step, double gradScale,
                   std::vector<Parameter<T>> &params, StageOptimizerState<T> &state) {
  if (step < 1)
    throw std::invalid_argument("optimizer: step counts from 1, got " + std::to_string(step));
  if (state.parameters.empty())
    for (const Parameter<T> &p : params) {
      ParameterState<T> s;
      bool needsFirst = config.kind == OptimizerKind::AdamW || config.momentum > 0;
      if (needsFirst)
        s.first.reset(p.value->rows(), p.value->cols());
      if (config.kind == OptimizerKind::AdamW)
        s.second.reset(p.value->rows(), p.value->cols());
      state.parameters.push_back(std::move(s));
    }
  if (state.parameters.size() != params.size())
    throw std::invalid_argument("optimizer: state holds " + std::to_string(state.parameters.size()) +
                                " parameters, the stage " + std::to_string(params.size()));
  double correction1 = 1 - std::pow(config.beta1, double(step));
  double correction2 = 1 - std::pow(config.beta2, double(step));
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor<T> &w = *params[i].value;
    const Tensor<T> &grad = *params[i].grad;
    ParameterState<T> &s = state.parameters[i];
    bool adam = config.kind == OptimizerKind::AdamW;
    if ((adam || config.momentum > 0) && !s.first.sameShape(w))
      throw std::invalid_argument("optimizer: state of " + params[i].name + " is " +
                                  s.first.shapeString() + ", the parameter " + w.shapeString());
    if (adam && !s.second.sameShape(w))
      throw std::invalid_argument("optimizer: state of " + params[i].name + " is " +
                                  s.second.shapeString() + ", the parameter " + w.shapeString());
    for (size_t e = 0; e < w.size(); ++e) {
      double g = double(grad[e]) * gradScale, x = w[e];
      if (adam) {
        double m = config.beta1 * double(s.first[e]) + (1 - config.beta1) * g;
        double v = config.beta2 * double(s.second[e]) + (1 - config.beta2) * g * g;
        s.first[e] = T(m);
        s.second[e] = T(v);
        double update = (m / correction1) / (std::sqrt(v / correction2) + config.eps);
        x -= config.lr * (update + config.weightDecay * x);
      } else {
        g += config.weightDecay * x;
        if (config.momentum > 0) {
          double b = config.momentum * double(s.first[e]) + g;
          s.first[e] = T(b);
          g = b;
        }
        x -= config.lr * g;
      }
      w[e] = T(x);
    }
  }
}

std::string validateOptimizer(const OptimizerConfig &c) {
  auto bad = [](double x) { return !std::isfinite(x) || x < 0; };
  if (bad(c.lr) || c.lr == 0)
    return "--lr expects a finite positive number";
  if (bad(c.weightDecay))
    return "--weight-decay expects a finite number >= 0";
  if (bad(c.momentum) || c.momentum >= 1)
    return "--momentum expects a finite number in [0, 1)";
  if (bad(c.clipGradNorm))
    return "--clip-grad-norm expects a finite number >= 0 (0: no clipping)";
  return "";
}

template double gradientSquares<float>(const std::vector<Parameter<float>> &);
template double gradientSquares<double>(const std::vector<Parameter<double>> &);
template void optimizerStep<float>(const OptimizerConfig &, int64_t, double, std::vector<Parameter<float>> &,
                                   StageOptimizerState<float> &);
template void optimizerStep<double>(const OptimizerConfig &, int64_t, double, std::vector<Parameter<double>> &,
                                    StageOptimizerState<double> &);

} // namespace pipert
