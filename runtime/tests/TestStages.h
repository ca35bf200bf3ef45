// A user-style stage for the stage API tests: y = tanh(x W + b), written on
// SimpleStage, taking `in` and giving `out` columns, so chains whose widths
// change can be built. It keeps its own count of stored micro-batches (what a
// user's map holds) to compare with the runtime's storedMicroBatches().
#pragma once

#include "pipert/Random.h"
#include "pipert/SimpleStage.h"
#include "pipert/StageRegistry.h"

#include <cmath>
#include <map>
#include <memory>

namespace pipert::test {

template <typename T> class TanhStage : public SimpleStage<T> {
public:
  TanhStage(int in, int out, StageInit init)
      : SimpleStage<T>("tanh", in, out, init), w_(in, out), b_(1, out), dw_(in, out), db_(1, out) {
    fillUniform(w_, streamSeed(init.seed, init.stageIndex, "tanh.weight"), 1.0 / std::sqrt(double(in)));
    fillUniform(b_, streamSeed(init.seed, init.stageIndex, "tanh.bias"), 0.5);
  }

  std::string describe() const override { return "tanh"; }
  std::vector<Parameter<T>> parameters() override { return {{"tanh.weight", &w_, &dw_}, {"tanh.bias", &b_, &db_}}; }
  size_t held() const { return saved_.size(); }
  // A test may make the stage give a wrong width (what the base class must catch).
  int extraOutputColumns = 0;

protected:
  void computeForward(int mb, const Tensor<T> &x, Tensor<T> &y) override {
    Saved &s = saved_[mb];
    s.x = x;
    y.reset(x.rows(), w_.cols() + size_t(extraOutputColumns));
    for (size_t r = 0; r < x.rows(); ++r)
      for (size_t c = 0; c < w_.cols(); ++c) {
        T sum = b_(0, c);
        for (size_t k = 0; k < x.cols(); ++k)
          sum += x(r, k) * w_(k, c);
        y(r, c) = std::tanh(sum);
      }
    s.y = y;
  }
  void computeInputGrad(int mb, const Tensor<T> &dy, Tensor<T> &dx) override {
    Saved &s = saved_.at(mb);
    s.dz.reset(dy.rows(), dy.cols());
    for (size_t i = 0; i < dy.size(); ++i)
      s.dz[i] = dy[i] * (T(1) - s.y[i] * s.y[i]);
    dx.reset(dy.rows(), w_.rows());
    for (size_t r = 0; r < dx.rows(); ++r)
      for (size_t k = 0; k < dx.cols(); ++k) {
        T sum = 0;
        for (size_t c = 0; c < w_.cols(); ++c)
          sum += s.dz(r, c) * w_(k, c);
        dx(r, k) = sum;
      }
  }
  void computeWeightGrad(int mb) override {
    const Saved &s = saved_.at(mb);
    for (size_t k = 0; k < w_.rows(); ++k)
      for (size_t c = 0; c < w_.cols(); ++c) {
        T sum = 0;
        for (size_t r = 0; r < s.x.rows(); ++r)
          sum += s.x(r, k) * s.dz(r, c);
        dw_(k, c) += sum;
      }
    for (size_t c = 0; c < w_.cols(); ++c) {
      T sum = 0;
      for (size_t r = 0; r < s.dz.rows(); ++r)
        sum += s.dz(r, c);
      db_(0, c) += sum;
    }
  }
  void releaseMicroBatch(int mb) override { saved_.erase(mb); }

private:
  struct Saved {
    Tensor<T> x, y, dz;
  };
  Tensor<T> w_, b_, dw_, db_;
  std::map<int, Saved> saved_;
};

// Stage s of a chain that widens in the middle: hidden -> hidden+3 -> ... ->
// hidden (stage 0 takes and the last stage gives the data's width).
inline int chainWidth(const StageRequest &r, int boundary) {
  return boundary == 0 || boundary == r.numStages ? r.hidden : r.hidden + 3;
}
template <typename T> std::unique_ptr<Stage<T>> makeWideningStage(const StageRequest &r) {
  return std::make_unique<TanhStage<T>>(chainWidth(r, r.stageIndex), chainWidth(r, r.stageIndex + 1), r.init());
}

} // namespace pipert::test
