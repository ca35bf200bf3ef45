// Bad sizes are the caller's mistake: each throws std::invalid_argument whose
// message names the value and the rule, and nothing crashes.
#include "TestModels.h"

#include "pipert/Reference.h"

#include <catch2/catch.hpp>

#include <functional>

using namespace pipert;
using namespace pipert::test;

namespace {

void requireInvalid(const std::function<void()> &f, const std::string &fragment) {
  try {
    f();
    FAIL("no exception; expected std::invalid_argument containing \"" << fragment << "\"");
  } catch (const std::invalid_argument &e) {
    CHECK_THAT(e.what(), Catch::Contains(fragment));
  }
}

class FakeGroup final : public AllToAll<double> {
public:
  FakeGroup(int rank, int size) : rank_(rank), size_(size) {}
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  std::vector<TokenBlock<double>> exchange(std::vector<TokenBlock<double>>) override { return {}; }

private:
  int rank_, size_;
};

} // namespace

TEST_CASE("bad dense sizes throw invalid_argument", "[runtime]") {
  DenseConfig c = smallDense();
  c.hidden = 0;
  requireInvalid([&] { (void)DenseStage<double>(c, {}); }, "dense stage 0: hidden size must be positive, got 0");
  c = smallDense();
  c.ffnHidden = -3;
  requireInvalid([&] { (void)DenseStage<float>(c, {}); }, "ffnHidden must be positive, got -3");
  requireInvalid([&] { (void)DenseStage<double>(smallDense(), {1, -1}); }, "stage index must be non-negative");
}

TEST_CASE("bad moe sizes throw invalid_argument", "[runtime]") {
  MoeConfig c = smallMoe();
  c.hidden = 0;
  requireInvalid([&] { (void)MoeStage<double>(c, {}); }, "hidden size must be positive, got 0");
  c = smallMoe();
  c.experts = 6;
  requireInvalid([&] { (void)MoeStage<double>(c, {}, std::make_shared<FakeGroup>(0, 4)); },
                 "6 experts are not divisible by the expert-parallel size 4");
  c = smallMoe();
  c.experts = 2;
  c.topK = 3;
  requireInvalid([&] { (void)MoeStage<double>(c, {}); }, "topK (3) exceeds the number of experts (2)");
  c = smallMoe();
  c.topK = 0;
  requireInvalid([&] { (void)MoeStage<double>(c, {}); }, "topK must be positive, got 0");
  c = smallMoe();
  c.experts = 0;
  requireInvalid([&] { (void)MoeStage<double>(c, {}); }, "number of experts must be positive, got 0");
  c = smallMoe();
  c.expertHidden = 0;
  requireInvalid([&] { (void)MoeStage<double>(c, {}); }, "expertHidden must be positive");
  requireInvalid([&] { (void)MoeStage<double>(smallMoe(), {}, std::make_shared<FakeGroup>(2, 2)); },
                 "expert-parallel rank 2 outside [0, 2)");
  requireInvalid([&] { (void)MoeStage<double>(smallMoe(), {}, std::make_shared<FakeGroup>(0, 0)); },
                 "expert-parallel size must be positive, got 0");
}

TEST_CASE("wrongly shaped tensors throw invalid_argument", "[runtime]") {
  DenseStage<double> stage(smallDense(), {1, 2});
  Tensor<double> y, dx;
  requireInvalid([&] { stage.forward(0, Tensor<double>(3, kHidden + 1), y); },
                 "stage 2 (dense), micro-batch 0: input is 3x7, expected tokens x 6");
  requireInvalid([&] { stage.forward(0, Tensor<double>(0, kHidden), y); }, "at least one token");
  CHECK(stage.storedMicroBatches() == 0);
  stage.forward(0, randomTensor<double>(3, kHidden, 1), y);
  requireInvalid([&] { stage.backward(0, Tensor<double>(4, kHidden), dx); },
                 "output gradient is 4x6, expected 3x6");
  stage.backward(0, Tensor<double>(3, kHidden, 1.0), dx); // still usable after the rejected call
  CHECK(stage.storedMicroBatches() == 0);
}

TEST_CASE("bad batches and stage lists throw invalid_argument", "[runtime]") {
  const ModelSpec model = mixedModel(1);
  requireInvalid([&] { makeStage<double>(model, 4); }, "stage index 4 outside a model of 4 stages");
  auto stages = makeAllStages<double>(model);
  Reference<double> ref(stagePointers(stages));
  requireInvalid([&] { ref.run({0, 4, kHidden, 1}); }, "micro-batch count must be positive, got 0");
  requireInvalid([&] { ref.run({2, 0, kHidden, 1}); }, "tokens per micro-batch must be positive");
  requireInvalid([&] { ref.run({2, 4, kHidden + 2, 1}); }, "batch hidden size 8 differs from the model's 6");
  requireInvalid([&] { ref.run({2, 4, kHidden, 1}, 1, 2); }, "micro-batches [1, 3) outside [0, 2)");

  std::vector<Stage<double> *> swapped = stagePointers(stages);
  std::swap(swapped[0], swapped[1]);
  requireInvalid([&] { (void)Reference<double>(swapped); }, "position 0 holds stage 1");
  requireInvalid([&] { (void)Reference<double>(std::vector<Stage<double> *>{}); }, "no stages");
  DenseConfig wide = smallDense();
  wide.hidden = 8;
  DenseStage<double> other(wide, {1, 1});
  requireInvalid([&] { (void)Reference<double>({stages[0].get(), &other}); }, "stage 1 takes 8 columns, stage 0 gives 6");
}
