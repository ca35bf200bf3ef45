// Gradient snapshots, sums and comparison (see Gradients.h).
#include "pipert/Gradients.h"

#include "pipert/Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace pipert {

template <typename T> StageGradients<T> snapshotGradients(Stage<T> &stage) {
  StageGradients<T> out;
  for (const Parameter<T> &p : stage.parameters())
    out.push_back({p.name, *p.grad});
  return out;
}

namespace {
template <typename R, typename A>
void requireSameLayout(const GradientSet<R> &a, const GradientSet<A> &b) {
  if (a.size() != b.size())
    throw std::invalid_argument("gradient sets have " + std::to_string(a.size()) + " and " +
                                std::to_string(b.size()) + " stages");
  for (size_t s = 0; s < a.size(); ++s) {
    const std::string where = "stage " + std::to_string(s) + ": ";
    if (a[s].size() != b[s].size())
      throw std::invalid_argument(where + std::to_string(a[s].size()) + " vs " + std::to_string(b[s].size()) +
                                  " parameters");
    for (size_t p = 0; p < a[s].size(); ++p)
      if (a[s][p].name != b[s][p].name || a[s][p].value.rows() != b[s][p].value.rows() ||
          a[s][p].value.cols() != b[s][p].value.cols())
        throw std::invalid_argument(where + "parameter " + a[s][p].name + " (" + a[s][p].value.shapeString() +
                                    ") vs " + b[s][p].name + " (" + b[s][p].value.shapeString() + ")");
  }
}
} // namespace

template <typename T> void addGradients(GradientSet<T> &acc, const GradientSet<T> &more) {
  requireSameLayout(acc, more);
  for (size_t s = 0; s < acc.size(); ++s)
    for (size_t p = 0; p < acc[s].size(); ++p)
      addInPlace(acc[s][p].value, more[s][p].value);
}

template <typename R, typename A> double relativeError(const Tensor<R> &reference, const Tensor<A> &actual) {
  if (reference.rows() != actual.rows() || reference.cols() != actual.cols())
    throw std::invalid_argument("relativeError: shapes " + reference.shapeString() + " and " + actual.shapeString());
  double maxDiff = 0, maxRef = 0, maxActual = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    const double r = static_cast<double>(reference[i]), a = static_cast<double>(actual[i]);
    if (!std::isfinite(r) || !std::isfinite(a))
      return std::numeric_limits<double>::infinity();
    maxDiff = std::max(maxDiff, std::abs(a - r));
    maxRef = std::max(maxRef, std::abs(r));
    maxActual = std::max(maxActual, std::abs(a));
  }
  return maxRef > 0 ? maxDiff / maxRef : maxActual;
}

double GradientComparison::maxRelError() const {
  double worst = 0;
  for (const StageError &s : stages)
    worst = std::max(worst, s.maxRelError);
  return worst;
}

std::string GradientComparison::report() const {
  std::string out;
  char line[256];
  for (const StageError &s : stages) {
    std::snprintf(line, sizeof line, "stage %d: max rel error %.3g (%s) %s\n", s.stage, s.maxRelError,
                  s.worstParameter.empty() ? "no parameters" : s.worstParameter.c_str(),
                  s.maxRelError <= tolerance ? "ok" : "FAIL");
    out += line;
  }
  return out;
}

template <typename R, typename A>
GradientComparison compareGradients(const GradientSet<R> &reference, const GradientSet<A> &actual, double tolerance) {
  requireSameLayout(reference, actual);
  GradientComparison result;
  result.tolerance = tolerance;
  result.passed = true;
  for (size_t s = 0; s < reference.size(); ++s) {
    StageError stage;
    stage.stage = static_cast<int>(s);
    double worst = -1;
    for (size_t p = 0; p < reference[s].size(); ++p) {
      const double err = relativeError(reference[s][p].value, actual[s][p].value);
      if (err > worst) {
        worst = err;
        stage.worstParameter = reference[s][p].name;
      }
    }
    stage.maxRelError = std::max(worst, 0.0);
    result.passed = result.passed && stage.maxRelError <= tolerance;
    result.stages.push_back(stage);
  }
  return result;
}

template StageGradients<float> snapshotGradients<float>(Stage<float> &);
template StageGradients<double> snapshotGradients<double>(Stage<double> &);
template void addGradients<float>(GradientSet<float> &, const GradientSet<float> &);
template void addGradients<double>(GradientSet<double> &, const GradientSet<double> &);

#define PIPERT_INSTANTIATE_COMPARE(R, A)                                                           \
  template double relativeError<R, A>(const Tensor<R> &, const Tensor<A> &);                       \
  template GradientComparison compareGradients<R, A>(const GradientSet<R> &, const GradientSet<A> &, double);

PIPERT_INSTANTIATE_COMPARE(float, float)
PIPERT_INSTANTIATE_COMPARE(double, double)
PIPERT_INSTANTIATE_COMPARE(double, float)
PIPERT_INSTANTIATE_COMPARE(float, double)

} // namespace pipert
