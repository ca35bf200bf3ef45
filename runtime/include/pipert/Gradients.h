// Gradient snapshots and their comparison: what a run hands back (per stage,
// per parameter, by name) and how the runtime checks a pipelined run against
// the reference.
//
// Error measure, per parameter: max_i |actual_i - ref_i| / max_i |ref_i|, i.e.
// relative to the largest reference value of that parameter (so tiny elements
// next to large ones do not blow up the ratio, and a small bias gradient is not
// hidden behind a large weight gradient). Guard: a parameter whose reference is
// all zero is measured by max |actual_i| (absolute). Any NaN or infinity makes
// the error infinite. A stage's error is the max over its parameters.
#pragma once

#include "pipert/Stage.h"

#include <string>
#include <vector>

namespace pipert {

template <typename T>
struct NamedTensor {
  std::string name;
  Tensor<T> value;
};
template <typename T> using StageGradients = std::vector<NamedTensor<T>>;
template <typename T> using GradientSet = std::vector<StageGradients<T>>; // index: stage

template <typename T> StageGradients<T> snapshotGradients(Stage<T> &stage);
// acc += more, parameter by parameter (summing parameter copies or runs).
// Throws std::invalid_argument if the two do not list the same parameters.
template <typename T> void addGradients(GradientSet<T> &acc, const GradientSet<T> &more);

// The measure above for one tensor (shapes must match).
template <typename R, typename A> double relativeError(const Tensor<R> &reference, const Tensor<A> &actual);

struct StageError {
  int stage = 0;
  double maxRelError = 0;
  std::string worstParameter; // the parameter attaining maxRelError
};

struct GradientComparison {
  double tolerance = 0;
  std::vector<StageError> stages;
  bool passed = false;
  double maxRelError() const;
  // One line per stage: "stage 1: max rel error 3.2e-16 (mlp.fc1.weight) ok".
  std::string report() const;
};

// Tolerances for a run whose only difference from the reference is the order
// of accumulation (over micro-batches and parameter copies).
// Measured (4 stages, h 6..32, M 4..16): fp32 ~3e-7, fp64 ~5e-16.
template <typename T> constexpr double accumulationTolerance() { return sizeof(T) == 4 ? 1e-5 : 1e-12; }

// Tolerance for an fp32 run against the fp64 reference of the same model
// (parameters and data are the rounded fp64 values). Measured worst error
// ~6e-7 on the same models; a real mistake gives O(1).
constexpr double kFp32VsFp64Tolerance = 1e-4;

// Throws std::invalid_argument if the two sets differ in stages, parameter
// names or shapes; passes when every stage's error is <= tolerance.
template <typename R, typename A>
GradientComparison compareGradients(const GradientSet<R> &reference, const GradientSet<A> &actual, double tolerance);

} // namespace pipert
