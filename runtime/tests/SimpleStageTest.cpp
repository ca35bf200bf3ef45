// SimpleStage's mapping onto the stage protocol: parts in order equal the whole
// calls, I then W equals B bit for bit, stored micro-batches are counted from
// forward to the release (the count the executor compares with the compiler's
// prediction), and widths may change along a chain of stages.
#include "TestModels.h"
#include "TestStages.h"

#include "pipert/Gradients.h"
#include "pipert/Reference.h"

#include <catch2/catch.hpp>

using namespace pipert;
using namespace pipert::test;

namespace {

void requireSameGradients(Stage<double> &a, Stage<double> &b) {
  const auto ga = snapshotGradients(a), gb = snapshotGradients(b);
  REQUIRE(ga.size() == gb.size());
  for (size_t p = 0; p < ga.size(); ++p) {
    INFO(ga[p].name);
    CHECK(ga[p].value.identical(gb[p].value));
  }
}

} // namespace

TEST_CASE("a simple stage's parts in order equal its whole calls", "[runtime][stages]") {
  TanhStage<double> whole(5, 3, {4, 1}), parts(5, 3, {4, 1});
  const Tensor<double> x = randomTensor<double>(7, 5, 1), dy = randomTensor<double>(7, 3, 2);
  Tensor<double> y, dx, yParts, dxParts;
  whole.forward(0, x, y);
  whole.backward(0, dy, dx);
  for (SubOp part : kForwardParts)
    parts.forwardPart(0, part, x, yParts);
  for (SubOp part : kBackwardParts)
    parts.backwardPart(0, part, dy, dxParts, WeightGrad::Now);
  CHECK(yParts.identical(y));
  CHECK(dxParts.identical(dx));
  requireSameGradients(whole, parts);
  CHECK(parts.storedMicroBatches() == 0);
  CHECK(parts.held() == 0);
}

TEST_CASE("a simple stage's I then W equals B bit for bit", "[runtime][stages]") {
  TanhStage<double> full(4, 4, {2, 3}), split(4, 4, {2, 3});
  const Tensor<double> x0 = randomTensor<double>(6, 4, 1), x1 = randomTensor<double>(6, 4, 2);
  const Tensor<double> dy0 = randomTensor<double>(6, 4, 3), dy1 = randomTensor<double>(6, 4, 4);
  Tensor<double> y, dxFull0, dxFull1, dx0, dx1;
  full.forward(0, x0, y);
  full.forward(1, x1, y);
  full.backward(0, dy0, dxFull0);
  full.backward(1, dy1, dxFull1);

  split.forward(0, x0, y);
  split.forward(1, x1, y);
  split.backwardInput(0, dy0, dx0);
  split.backwardInput(1, dy1, dx1); // both I halves first, as zero-bubble schedules run them
  for (const Parameter<double> &p : split.parameters()) {
    INFO(p.name << ": I leaves the weight gradient to W");
    CHECK(p.grad->identical(Tensor<double>(p.grad->rows(), p.grad->cols())));
  }
  split.backwardWeight(0);
  split.backwardWeight(1);
  CHECK(dx0.identical(dxFull0));
  CHECK(dx1.identical(dxFull1));
  requireSameGradients(full, split);
}

TEST_CASE("stored micro-batches are counted from forward until B, W or discard", "[runtime][stages]") {
  TanhStage<double> stage(3, 3, {1, 0});
  const Tensor<double> x = randomTensor<double>(4, 3, 1), dy = randomTensor<double>(4, 3, 2);
  Tensor<double> y, dx;
  auto counts = [&](size_t n) {
    CHECK(stage.storedMicroBatches() == n);
    CHECK(stage.held() == n); // the stage frees exactly when the runtime stops counting
  };
  stage.forward(0, x, y);
  stage.forward(1, x, y);
  stage.forward(2, x, y);
  counts(3);
  stage.backward(0, dy, dx);
  counts(2);
  stage.backwardInput(1, dy, dx);
  counts(2); // W still needs what I kept
  stage.backwardWeight(1);
  counts(1);
  stage.discard(2);
  counts(0);
}

TEST_CASE("a stage that gives the wrong width is stopped with its name", "[runtime][stages]") {
  TanhStage<double> stage(3, 2, {1, 5});
  stage.extraOutputColumns = 1;
  const Tensor<double> x = randomTensor<double>(4, 3, 1);
  Tensor<double> y;
  REQUIRE_THROWS_AS(stage.forward(0, x, y), std::logic_error);
  TanhStage<double> again(3, 2, {1, 5});
  again.extraOutputColumns = 1;
  CHECK_THROWS_WITH(again.forward(0, x, y), Catch::Contains("stage 5 (tanh), micro-batch 0: forward gave an "
                                                            "output of 4x3, expected 4x2"));
  TanhStage<double> narrow(3, 2, {1, 5});
  CHECK_THROWS_WITH(narrow.forward(0, randomTensor<double>(4, 2, 1), y), Catch::Contains("expected tokens x 3"));
}

TEST_CASE("a chain whose widths change: 1 -> h -> h -> h", "[runtime][stages]") {
  const int h = 5;
  std::vector<std::unique_ptr<Stage<double>>> chain;
  chain.push_back(std::make_unique<TanhStage<double>>(1, h, StageInit{3, 0}));
  for (int s = 1; s < 4; ++s)
    chain.push_back(std::make_unique<TanhStage<double>>(h, h, StageInit{3, s}));
  REQUIRE_NOTHROW(Reference<double>(stagePointers(chain)));

  // Forward and backward by hand: each stage gives what the next one takes.
  Tensor<double> x = randomTensor<double>(6, 1, 1), y;
  for (auto &stage : chain) {
    stage->forward(0, x, y);
    CHECK(y.cols() == size_t(h));
    std::swap(x, y);
  }
  Tensor<double> grad = randomTensor<double>(6, h, 2), gradIn;
  for (size_t s = chain.size(); s-- > 0;) {
    chain[s]->backward(0, grad, gradIn);
    CHECK(gradIn.cols() == size_t(chain[s]->inputWidth()));
    std::swap(grad, gradIn);
  }
  CHECK(grad.cols() == 1);

  // The reference refuses a chain where a stage does not take what the one before gives.
  std::vector<std::unique_ptr<Stage<double>>> broken;
  broken.push_back(std::make_unique<TanhStage<double>>(1, h, StageInit{3, 0}));
  broken.push_back(std::make_unique<TanhStage<double>>(h + 1, h, StageInit{3, 1}));
  CHECK_THROWS_WITH(Reference<double>(stagePointers(broken)),
                    Catch::Contains("reference: stage 1 takes 6 columns, stage 0 gives 5"));
}

TEST_CASE("the reference trains a widening chain: its gradients match finite differences", "[runtime][stages]") {
  // 1 -> 4 -> 1 (the data is one column wide), three micro-batches.
  std::vector<std::unique_ptr<Stage<double>>> chain;
  chain.push_back(std::make_unique<TanhStage<double>>(1, 4, StageInit{8, 0}));
  chain.push_back(std::make_unique<TanhStage<double>>(4, 1, StageInit{8, 1}));
  Reference<double> reference(stagePointers(chain));
  const BatchSpec batch{3, 5, 1, 11};
  ReferenceResult<double> result = reference.run(batch);
  for (size_t s = 0; s < chain.size(); ++s) {
    std::vector<Parameter<double>> params = chain[s]->parameters();
    for (size_t p = 0; p < params.size(); ++p) {
      INFO("stage " << s << ", " << params[p].name);
      Tensor<double> numeric = numericGradient(*params[p].value, [&] { return reference.loss(batch); });
      CHECK(relativeError(numeric, result.gradients[s][p].value) < 1e-7);
    }
  }
}
