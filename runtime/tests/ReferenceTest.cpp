// The reference: gradient accumulation over micro-batches, its loss gradient
// against finite differences, fp32 against fp64, and the comparison utility.
#include "TestModels.h"

#include "pipert/Loss.h"
#include "pipert/Reference.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace pipert;
using namespace pipert::test;

namespace {
const BatchSpec kBatch{/*microBatches=*/4, /*tokens=*/5, /*hidden=*/kHidden, /*seed=*/77};

template <typename T> ReferenceResult<T> runReference(const ModelSpec &model, const BatchSpec &batch) {
  auto stages = makeAllStages<T>(model);
  return Reference<T>(stagePointers(stages)).run(batch);
}
} // namespace

TEST_CASE("reference over M micro-batches equals the sum of per-micro-batch runs", "[runtime]") {
  auto stages = makeAllStages<double>(mixedModel(5));
  Reference<double> ref(stagePointers(stages));
  const ReferenceResult<double> whole = ref.run(kBatch);
  REQUIRE(whole.microBatchLosses.size() == 4);

  ReferenceResult<double> sum = ref.run(kBatch, 0, 1);
  for (int mb = 1; mb < kBatch.microBatches; ++mb) {
    const ReferenceResult<double> one = ref.run(kBatch, mb, 1);
    addGradients(sum.gradients, one.gradients);
    sum.loss += one.loss;
    CHECK(one.loss == whole.microBatchLosses[static_cast<size_t>(mb)]);
  }
  // Same additions in the same order: exactly equal, not merely close.
  const GradientComparison c = compareGradients(whole.gradients, sum.gradients, 0.0);
  INFO(c.report());
  CHECK(c.passed);
  CHECK(sum.loss == whole.loss);
  for (Stage<double> *s : stagePointers(stages))
    CHECK(s->storedMicroBatches() == 0);
}

TEST_CASE("accumulating micro-batches in another order stays within accumulationTolerance", "[runtime]") {
  auto stages = makeAllStages<float>(mixedModel(5));
  Reference<float> ref(stagePointers(stages));
  const BatchSpec batch{16, 5, kHidden, 3};
  const ReferenceResult<float> forward = ref.run(batch);
  ReferenceResult<float> reversed = ref.run(batch, batch.microBatches - 1, 1);
  for (int mb = batch.microBatches - 2; mb >= 0; --mb)
    addGradients(reversed.gradients, ref.run(batch, mb, 1).gradients);
  const GradientComparison c = compareGradients(forward.gradients, reversed.gradients, accumulationTolerance<float>());
  INFO(c.report());
  CHECK(c.passed);
}

TEST_CASE("reference loss gradient matches finite differences", "[runtime]") {
  auto stages = makeAllStages<double>(mixedModel(8));
  Reference<double> ref(stagePointers(stages));
  const BatchSpec batch{2, 4, kHidden, 9};
  const ReferenceResult<double> r = ref.run(batch);
  CHECK(std::abs(ref.loss(batch) - r.loss) <= 1e-12 * r.loss);
  // One parameter of each kind, in the first and the last stage.
  for (int s : {0, 3}) {
    for (Parameter<double> &p : stages[static_cast<size_t>(s)]->parameters()) {
      if (p.name != "mlp.fc1.weight" && p.name != "router.gate.weight" && p.name != "attention.wk.weight" &&
          p.name != "experts.1.fc2.bias")
        continue;
      INFO("stage " << s << " " << p.name);
      const Tensor<double> fd = numericGradient(*p.value, [&] { return ref.loss(batch); });
      CHECK(relativeError(fd, *p.grad) < 1e-6);
    }
  }
}

TEST_CASE("fp32 matches fp64 within kFp32VsFp64Tolerance", "[runtime]") {
  const ModelSpec model = mixedModel(5);
  const ReferenceResult<double> d = runReference<double>(model, kBatch);
  const ReferenceResult<float> f = runReference<float>(model, kBatch);
  const GradientComparison c = compareGradients(d.gradients, f.gradients, kFp32VsFp64Tolerance);
  INFO(c.report());
  CHECK(c.passed);
  CHECK(c.maxRelError() > 0); // really two different precisions
  CHECK(std::abs(d.loss - f.loss) <= 1e-5 * d.loss);
}

TEST_CASE("compareGradients measures per parameter and fails on any bad value", "[runtime]") {
  GradientSet<double> ref(2), same(2);
  ref[0] = {{"w", Tensor<double>(2, 2, 4.0)}, {"zero", Tensor<double>(1, 2, 0.0)}};
  ref[1] = {{"b", Tensor<double>(1, 3, 1e-3)}};
  same = ref;
  CHECK(compareGradients(ref, same, 0.0).passed);

  GradientSet<double> off = ref;
  off[1][0].value[2] += 1e-6; // 1e-3 relative to this parameter's largest value
  GradientComparison c = compareGradients(ref, off, 1e-4);
  CHECK_FALSE(c.passed);
  CHECK(c.stages[0].maxRelError == 0);
  CHECK(c.stages[1].maxRelError == Approx(1e-3));
  CHECK(c.stages[1].worstParameter == "b");
  CHECK_THAT(c.report(), Catch::Contains("stage 1: max rel error 0.001 (b) FAIL"));

  GradientSet<double> nonzero = ref; // reference all zero: measured absolutely
  nonzero[0][1].value[0] = 1e-9;
  CHECK(compareGradients(ref, nonzero, 1e-8).passed);
  CHECK_FALSE(compareGradients(ref, nonzero, 1e-10).passed);

  GradientSet<double> nan = ref;
  nan[0][0].value[1] = std::nan("");
  CHECK_FALSE(compareGradients(ref, nan, 1e300).passed);

  GradientSet<double> renamed = ref;
  renamed[0][0].name = "v";
  CHECK_THROWS_AS(compareGradients(ref, renamed, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(compareGradients(ref, GradientSet<double>(1), 1.0), std::invalid_argument);
}

TEST_CASE("mse loss and its gradient", "[runtime]") {
  Tensor<double> y(1, 2), t(1, 2), g;
  y[0] = 3;
  y[1] = 1;
  t[0] = 1;
  t[1] = 1;
  CHECK(mseLoss(y, t) == 2.0); // (2^2 + 0) / 2
  mseLossGrad(y, t, g);
  CHECK(g[0] == 2.0); // 2 * 2 / 2
  CHECK(g[1] == 0.0);
}
