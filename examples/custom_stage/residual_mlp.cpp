// A user's pipeline stage in plain C++: a residual MLP, every stage alike,
//   y = x + tanh(x W1 + b1) W2 + b2      (x: tokens x h, W1: h x 2h, W2: 2h x h)
// written on pipert's SimpleStage (forward, input gradient, weight gradient,
// release) and registered as the stage provider "residual_mlp". Linked into a
// program with `pipec build ... --stage-source residual_mlp.cpp`, it trains with
// `--model residual_mlp`; see README.md.
#include "pipert/Random.h"
#include "pipert/SimpleStage.h"
#include "pipert/StageRegistry.h"

#include <cmath>
#include <map>
#include <memory>

namespace {

using pipert::Parameter;
using pipert::Tensor;

// out = a b (+ bias on every row): a is n x k, b is k x m.
template <typename T> void multiply(const Tensor<T> &a, const Tensor<T> &b, const Tensor<T> *bias, Tensor<T> &out) {
  out.reset(a.rows(), b.cols());
  for (size_t r = 0; r < a.rows(); ++r)
    for (size_t c = 0; c < b.cols(); ++c) {
      T sum = bias ? (*bias)(0, c) : T(0);
      for (size_t k = 0; k < a.cols(); ++k)
        sum += a(r, k) * b(k, c);
      out(r, c) = sum;
    }
}

// out = d bᵀ: the gradient at a of a b, for the gradient d at the product.
template <typename T> void multiplyByTransposed(const Tensor<T> &d, const Tensor<T> &b, Tensor<T> &out) {
  out.reset(d.rows(), b.rows());
  for (size_t r = 0; r < d.rows(); ++r)
    for (size_t k = 0; k < b.rows(); ++k) {
      T sum = 0;
      for (size_t c = 0; c < d.cols(); ++c)
        sum += d(r, c) * b(k, c);
      out(r, k) = sum;
    }
}

// grad += aᵀ d and biasGrad += the column sums of d: one micro-batch's weight
// gradient, summed in full before it is added, so it does not matter when W runs.
template <typename T>
void accumulateWeightGrad(const Tensor<T> &a, const Tensor<T> &d, Tensor<T> &grad, Tensor<T> &biasGrad) {
  for (size_t k = 0; k < a.cols(); ++k)
    for (size_t c = 0; c < d.cols(); ++c) {
      T sum = 0;
      for (size_t r = 0; r < a.rows(); ++r)
        sum += a(r, k) * d(r, c);
      grad(k, c) += sum;
    }
  for (size_t c = 0; c < d.cols(); ++c) {
    T sum = 0;
    for (size_t r = 0; r < d.rows(); ++r)
      sum += d(r, c);
    biasGrad(0, c) += sum;
  }
}

template <typename T> class ResidualMlp final : public pipert::SimpleStage<T> {
public:
  ResidualMlp(int hidden, int inner, pipert::StageInit init)
      : pipert::SimpleStage<T>("residual_mlp", hidden, init), w1_(hidden, inner), b1_(1, inner),
        w2_(inner, hidden), b2_(1, hidden), dw1_(hidden, inner), db1_(1, inner), dw2_(inner, hidden),
        db2_(1, hidden) {
    // From (seed, stage index, name) alone: every copy of a stage starts identical.
    auto draw = [&](Tensor<T> &t, const char *name, double bound) {
      pipert::fillUniform(t, pipert::streamSeed(init.seed, init.stageIndex, name), bound);
    };
    draw(w1_, "fc1.weight", 1.0 / std::sqrt(double(hidden)));
    draw(b1_, "fc1.bias", 1.0 / std::sqrt(double(hidden)));
    draw(w2_, "fc2.weight", 0.5 / std::sqrt(double(inner))); // small: each stage starts near identity
    draw(b2_, "fc2.bias", 0.5 / std::sqrt(double(inner)));
  }

  std::string describe() const override {
    return "residual_mlp(hidden=" + std::to_string(w1_.rows()) + ", inner=" + std::to_string(w1_.cols()) + ")";
  }

  std::vector<Parameter<T>> parameters() override {
    return {{"fc1.weight", &w1_, &dw1_}, {"fc1.bias", &b1_, &db1_},
            {"fc2.weight", &w2_, &dw2_}, {"fc2.bias", &b2_, &db2_}};
  }

protected:
  void computeForward(int mb, const Tensor<T> &x, Tensor<T> &y) override {
    Saved &saved = saved_[mb];
    saved.x = x;
    multiply(x, w1_, &b1_, saved.a);
    for (size_t i = 0; i < saved.a.size(); ++i)
      saved.a[i] = std::tanh(saved.a[i]);
    multiply(saved.a, w2_, &b2_, y);
    for (size_t i = 0; i < y.size(); ++i)
      y[i] += x[i];
  }

  void computeInputGrad(int mb, const Tensor<T> &dy, Tensor<T> &dx) override {
    Saved &saved = saved_.at(mb);
    saved.dy = dy;
    multiplyByTransposed(dy, w2_, saved.dz); // at a
    for (size_t i = 0; i < saved.dz.size(); ++i)
      saved.dz[i] *= T(1) - saved.a[i] * saved.a[i]; // through tanh
    multiplyByTransposed(saved.dz, w1_, dx);
    for (size_t i = 0; i < dx.size(); ++i)
      dx[i] += dy[i]; // the residual
  }

  void computeWeightGrad(int mb) override {
    const Saved &saved = saved_.at(mb);
    accumulateWeightGrad(saved.x, saved.dz, dw1_, db1_);
    accumulateWeightGrad(saved.a, saved.dy, dw2_, db2_);
  }

  void releaseMicroBatch(int mb) override { saved_.erase(mb); }

private:
  // What one micro-batch keeps from its forward (x, a) and its I half (dy, dz)
  // until its W.
  struct Saved {
    Tensor<T> x, a, dy, dz;
  };

  Tensor<T> w1_, b1_, w2_, b2_, dw1_, db1_, dw2_, db2_;
  std::map<int, Saved> saved_;
};

template <typename T> std::unique_ptr<pipert::Stage<T>> makeResidualMlp(const pipert::StageRequest &request) {
  return std::make_unique<ResidualMlp<T>>(request.hidden, 2 * request.hidden, request.init());
}

pipert::StageProvider residualMlp() {
  return {"residual_mlp", "residual MLP stages (examples/custom_stage)", makeResidualMlp<float>,
          makeResidualMlp<double>};
}

} // namespace

PIPERT_REGISTER_STAGES(residualMlp());
