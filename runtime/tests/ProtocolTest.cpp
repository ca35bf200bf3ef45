// The per-micro-batch protocol is checked: calls out of order throw
// std::logic_error naming the stage, the micro-batch and what was expected.
#include "TestModels.h"

#include <catch2/catch.hpp>

using namespace pipert;
using namespace pipert::test;

namespace {

void requireMisuse(const std::function<void()> &f, const std::string &fragment) {
  try {
    f();
    FAIL("no exception; expected std::logic_error containing \"" << fragment << "\"");
  } catch (const std::invalid_argument &e) {
    FAIL("invalid_argument instead of logic_error: " << e.what());
  } catch (const std::logic_error &e) {
    CHECK_THAT(e.what(), Catch::Contains(fragment));
  }
}

} // namespace

TEST_CASE("stage protocol misuse throws logic_error", "[runtime]") {
  MoeStage<double> stage(smallMoe(), {1, 3});
  const Tensor<double> x = randomTensor<double>(4, kHidden, 1), dy = randomTensor<double>(4, kHidden, 2);
  Tensor<double> y, dx;

  requireMisuse([&] { stage.backward(5, dy, dx); }, "stage 3 (moe), micro-batch 5: backward but no forward of it is stored");
  requireMisuse([&] { stage.forwardPart(5, SubOp::Mlp, x, y); }, "forward part mlp before its attention part");

  stage.forwardPart(0, SubOp::Attention, x, y);
  requireMisuse([&] { stage.forwardPart(0, SubOp::Mlp, x, y); }, "forward part mlp out of order; next is dispatch");
  requireMisuse([&] { stage.backward(0, dy, dx); }, "backward before its forward completed (1 of 4 forward parts run)");
  stage.forwardPart(0, SubOp::Dispatch, x, y);
  stage.forwardPart(0, SubOp::Mlp, x, y);
  stage.forwardPart(0, SubOp::Combine, x, y);
  requireMisuse([&] { stage.forwardPart(0, SubOp::Combine, x, y); }, "after its forward completed");
  requireMisuse([&] { stage.forward(0, x, y); }, "forward started again");
  requireMisuse([&] { stage.backwardWeight(0); }, "backwardWeight (W) without a completed backwardInput (I)");
  requireMisuse([&] { stage.backwardPart(0, SubOp::Mlp, dy, dx, WeightGrad::Now); },
                "backward part mlp out of order; next is combine");

  stage.backwardPart(0, SubOp::Combine, dy, dx, WeightGrad::Deferred);
  requireMisuse([&] { stage.backwardPart(0, SubOp::Mlp, dy, dx, WeightGrad::Now); }, "mix full B");
  stage.backwardPart(0, SubOp::Mlp, dy, dx, WeightGrad::Deferred);
  stage.backwardPart(0, SubOp::Dispatch, dy, dx, WeightGrad::Deferred);
  stage.backwardPart(0, SubOp::Attention, dy, dx, WeightGrad::Deferred);
  requireMisuse([&] { stage.backward(0, dy, dx); }, "its input-gradient half already ran and waits for W");
  CHECK(stage.storedMicroBatches() == 1);
  stage.backwardWeight(0);
  CHECK(stage.storedMicroBatches() == 0);
  requireMisuse([&] { stage.backwardWeight(0); }, "no forward of it is stored");
}

TEST_CASE("discard drops a micro-batch's state", "[runtime]") {
  DenseStage<double> stage(smallDense(), {1, 0});
  Tensor<double> y, dx;
  stage.forward(7, randomTensor<double>(3, kHidden, 1), y);
  CHECK(stage.storedMicroBatches() == 1);
  stage.discard(7);
  CHECK(stage.storedMicroBatches() == 0);
  CHECK_THROWS_AS(stage.backward(7, y, dx), std::logic_error);
}
