// Bit-exactness of the split calls: I then W gives the same input and weight
// gradients as B, and sub-operation parts in order -- including two
// micro-batches interleaved the way an overlap pair runs them -- give the same
// outputs and gradients as the monolithic calls.
#include "TestModels.h"

#include "pipert/Gradients.h"

#include <catch2/catch.hpp>

using namespace pipert;
using namespace pipert::test;

namespace {

std::unique_ptr<Stage<double>> build(bool moe) {
  if (moe)
    return std::make_unique<MoeStage<double>>(smallMoe(), StageInit{9, 1});
  return std::make_unique<DenseStage<double>>(smallDense(), StageInit{9, 1});
}

void requireSameGradients(Stage<double> &a, Stage<double> &b) {
  const auto ga = snapshotGradients(a), gb = snapshotGradients(b);
  REQUIRE(ga.size() == gb.size());
  for (size_t p = 0; p < ga.size(); ++p) {
    INFO(ga[p].name);
    CHECK(ga[p].value.identical(gb[p].value));
  }
}

struct Data {
  Tensor<double> x0 = randomTensor<double>(7, kHidden, 1), x1 = randomTensor<double>(7, kHidden, 2);
  Tensor<double> dy0 = randomTensor<double>(7, kHidden, 3), dy1 = randomTensor<double>(7, kHidden, 4);
};

// The plain order F0 F1 B0 B1 with monolithic calls.
void runMonolithic(Stage<double> &s, const Data &d, Tensor<double> &y1, Tensor<double> &dx0) {
  Tensor<double> y0, dx1;
  s.forward(0, d.x0, y0);
  s.forward(1, d.x1, y1);
  s.backward(0, d.dy0, dx0);
  s.backward(1, d.dy1, dx1);
}

} // namespace

TEST_CASE("I then W equals B exactly", "[runtime]") {
  for (bool moe : {false, true}) {
    INFO((moe ? "moe" : "dense"));
    const Data d;
    auto full = build(moe), split = build(moe);
    Tensor<double> y1, dx0Full;
    runMonolithic(*full, d, y1, dx0Full);

    Tensor<double> y, dx0, dx1;
    split->forward(0, d.x0, y);
    split->forward(1, d.x1, y);
    split->backwardInput(0, d.dy0, dx0);
    split->backwardInput(1, d.dy1, dx1); // both I halves before any W, as zero-bubble schedules do
    CHECK(split->storedMicroBatches() == 2);
    split->backwardWeight(0);
    split->backwardWeight(1);
    CHECK(split->storedMicroBatches() == 0);
    CHECK(dx0.identical(dx0Full));
    requireSameGradients(*full, *split);
  }
}

TEST_CASE("sub-operation parts in order equal the monolithic calls exactly", "[runtime]") {
  for (bool moe : {false, true})
    for (WeightGrad when : {WeightGrad::Now, WeightGrad::Deferred}) {
      INFO((moe ? "moe" : "dense") << (when == WeightGrad::Now ? ", F & B" : ", F & I"));
      const Data d;
      auto mono = build(moe), parts = build(moe);
      Tensor<double> y1Mono, dx0Mono;
      runMonolithic(*mono, d, y1Mono, dx0Mono);

      // F0, then the overlap pair F1 & B0 (or I0) with parts alternating, then B1.
      Tensor<double> y0, y1, dx0, dx1;
      for (SubOp part : kForwardParts)
        parts->forwardPart(0, part, d.x0, y0);
      for (size_t i = 0; i < kForwardParts.size(); ++i) {
        parts->forwardPart(1, kForwardParts[i], d.x1, y1);
        parts->backwardPart(0, kBackwardParts[i], d.dy0, dx0, when);
      }
      if (when == WeightGrad::Deferred)
        parts->backwardWeight(0);
      for (SubOp part : kBackwardParts)
        parts->backwardPart(1, part, d.dy1, dx1, WeightGrad::Now);

      CHECK(parts->storedMicroBatches() == 0);
      CHECK(y1.identical(y1Mono));
      CHECK(dx0.identical(dx0Mono));
      requireSameGradients(*mono, *parts);
    }
}

// Offload/Reload (Stage::takeStored, putStored): micro-batch 0's stored state
// leaves the stage between its forward and its backward, through host copies
// the way the CPU executor makes them, and comes back; the backward then gives
// bit-identical input and weight gradients, whole B and split I/W alike.
TEST_CASE("offloaded and reloaded state gives the same gradients exactly", "[runtime]") {
  for (bool moe : {false, true})
    for (bool split : {false, true}) {
      INFO((moe ? "moe" : "dense") << (split ? ", I then W" : ", B"));
      const Data d;
      auto plain = build(moe), moved = build(moe);
      Tensor<double> y1, dx0Plain;
      runMonolithic(*plain, d, y1, dx0Plain);

      Tensor<double> y, dx0, dx1;
      moved->forward(0, d.x0, y);
      std::vector<Tensor<double>> device = moved->takeStored(0);
      CHECK(moved->storedMicroBatches() == 0);
      size_t elements = 0;
      std::vector<Tensor<double>> host;
      for (Tensor<double> &t : device) { // copy, then free the original
        elements += t.size();
        host.push_back(t);
        t.release();
      }
      CHECK(elements > 0);
      moved->forward(1, d.x1, y); // another micro-batch runs meanwhile
      CHECK(moved->storedMicroBatches() == 1);
      std::vector<Tensor<double>> back(host.begin(), host.end());
      moved->putStored(0, std::move(back));
      CHECK(moved->storedMicroBatches() == 2);
      if (split) {
        moved->backwardInput(0, d.dy0, dx0);
        moved->backwardWeight(0);
      } else {
        moved->backward(0, d.dy0, dx0);
      }
      moved->backward(1, d.dy1, dx1);
      CHECK(moved->storedMicroBatches() == 0);
      CHECK(dx0.identical(dx0Plain));
      requireSameGradients(*plain, *moved);
    }
}
