// Finite-difference checks in fp64: for each built-in stage (with and without
// attention), the input gradient and every weight gradient from backward()
// match central differences of a linear loss to < 1e-6 (relative to the
// largest gradient element of the tensor, as in Gradients.h).
#include "TestModels.h"

#include "pipert/Gradients.h"

#include <catch2/catch.hpp>

using namespace pipert;
using namespace pipert::test;

namespace {

constexpr double kTolerance = 1e-6;

void checkStageGradients(Stage<double> &stage, size_t tokens) {
  Tensor<double> x = randomTensor<double>(tokens, kHidden, 11);
  const Tensor<double> weights = randomTensor<double>(tokens, kHidden, 12);

  Tensor<double> y, dx;
  stage.zeroGradients();
  stage.forward(0, x, y);
  stage.backward(0, weights, dx);
  REQUIRE(stage.storedMicroBatches() == 0);

  auto loss = [&] { return dotLoss(forwardOnce(stage, x), weights); };
  {
    INFO("input gradient of " << stage.describe());
    const double err = relativeError(numericGradient(x, loss), dx);
    CHECK(err < kTolerance);
  }
  for (Parameter<double> &p : stage.parameters()) {
    INFO(stage.describe() << ": " << p.name);
    const double err = relativeError(numericGradient(*p.value, loss), *p.grad);
    CHECK(err < kTolerance);
    // The gradient is not trivially zero (every expert got tokens).
    CHECK(relativeError(*p.grad, Tensor<double>(p.grad->rows(), p.grad->cols())) > 0);
  }
}

} // namespace

TEST_CASE("dense stage gradients match finite differences", "[runtime]") {
  DenseStage<double> withAttention(smallDense(true), {3, 1});
  checkStageGradients(withAttention, 5);
  DenseStage<double> mlpOnly(smallDense(false), {3, 1});
  checkStageGradients(mlpOnly, 5);
}

TEST_CASE("moe stage gradients match finite differences, router included", "[runtime]") {
  MoeStage<double> withAttention(smallMoe(true), {3, 2});
  checkStageGradients(withAttention, 8);
  MoeStage<double> noAttention(smallMoe(false), {3, 2});
  checkStageGradients(noAttention, 8);
}

TEST_CASE("moe with top-1 and top-E routing matches finite differences", "[runtime]") {
  MoeConfig top1 = smallMoe();
  top1.topK = 1; // g = 1 always: the router gets no gradient, the experts do
  MoeStage<double> stage1(top1, {5, 0});
  Tensor<double> x = randomTensor<double>(8, kHidden, 21), y, dx;
  const Tensor<double> w = randomTensor<double>(8, kHidden, 22);
  stage1.forward(0, x, y);
  stage1.backward(0, w, dx);
  auto loss1 = [&] { return dotLoss(forwardOnce(stage1, x), w); };
  CHECK(relativeError(numericGradient(x, loss1), dx) < kTolerance);

  MoeConfig all = smallMoe();
  all.topK = all.experts; // dense mixture: the renormalization is the identity
  MoeStage<double> stageAll(all, {5, 0});
  checkStageGradients(stageAll, 8);
}
