// Parameter<T>: one trainable tensor of a stage and its gradient, as the
// executor sees them for gradient synchronization (sum over replicated copies,
// all-reduce over an expert-parallel group) and for comparison with the
// reference. Stages list their parameters in a fixed order with stable names.
#pragma once

#include "pipert/Tensor.h"

#include <string>

namespace pipert {

template <typename T>
struct Parameter {
  std::string name;        // e.g. "attention.wq.weight", "experts.3.fc1.bias"
  Tensor<T> *value = nullptr;
  Tensor<T> *grad = nullptr; // same shape as *value; accumulated over micro-batches
  // True for an expert's weights: each participant of an expert-parallel group
  // holds different experts. False: every participant holds a replica, whose
  // gradients must be summed across the group.
  bool expertSharded = false;
};

} // namespace pipert
