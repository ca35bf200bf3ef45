// The per-micro-batch protocol is checked: calls out of order throw
// std::logic_error naming the stage, the micro-batch and what was expected.
#include "TestModels.h"
#include "TestStages.h"

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

TEST_CASE("an offloaded micro-batch takes no call until it is reloaded", "[runtime]") {
  DenseStage<double> stage(smallDense(), {1, 0});
  const Tensor<double> x = randomTensor<double>(3, kHidden, 1), dy = randomTensor<double>(3, kHidden, 2);
  Tensor<double> y, dx;
  requireMisuse([&] { stage.takeStored(4); }, "micro-batch 4: offload but no forward of it is stored");
  stage.forwardPart(4, SubOp::Attention, x, y);
  requireMisuse([&] { stage.takeStored(4); }, "offload between the parts of its forward");
  stage.forwardPart(4, SubOp::Dispatch, x, y);
  stage.forwardPart(4, SubOp::Mlp, x, y);
  stage.forwardPart(4, SubOp::Combine, x, y);
  requireMisuse([&] { stage.putStored(4, {}); }, "reload but it is not offloaded");
  std::vector<Tensor<double>> held = stage.takeStored(4);
  CHECK(stage.storedMicroBatches() == 0);
  requireMisuse([&] { stage.backward(4, dy, dx); }, "backward while its stored state is offloaded (missing Reload?)");
  requireMisuse([&] { stage.forward(4, x, y); }, "forward while its earlier forward's state is offloaded");
  requireMisuse([&] { stage.takeStored(4); }, "offload while its stored state is offloaded");
  requireMisuse([&] { stage.putStored(4, {}); }, "tensors given back");
  stage.putStored(4, std::move(held));
  CHECK(stage.storedMicroBatches() == 1);
  stage.backward(4, dy, dx);
  CHECK(stage.storedMicroBatches() == 0);
  // Discarding an offloaded micro-batch forgets it as well.
  stage.forward(5, x, y);
  held = stage.takeStored(5);
  stage.discard(5);
  CHECK(stage.storedMicroBatches() == 0);
  requireMisuse([&] { stage.putStored(5, std::move(held)); }, "reload but it is not offloaded");
}

TEST_CASE("a stage that lists no stored tensors cannot be offloaded", "[runtime]") {
  TanhStage<double> stage(kHidden, kHidden, {1, 2});
  Tensor<double> y;
  stage.forward(0, randomTensor<double>(2, kHidden, 1), y);
  requireMisuse([&] { stage.takeStored(0); }, "this stage cannot be offloaded");
  CHECK(stage.storedMicroBatches() == 1); // nothing changed
}
