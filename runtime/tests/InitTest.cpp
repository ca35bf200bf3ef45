// Deterministic initialization: a stage is a function of (config, seed, stage
// index) only -- two copies are identical, other indices or seeds differ, and
// an expert's weights do not depend on how experts are sharded.
#include "TestModels.h"

#include <catch2/catch.hpp>

using namespace pipert;
using namespace pipert::test;

namespace {

bool allIdentical(const std::vector<Tensor<double>> &a, const std::vector<Tensor<double>> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].identical(b[i]))
      return false;
  return true;
}

bool noneIdentical(const std::vector<Tensor<double>> &a, const std::vector<Tensor<double>> &b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].identical(b[i]))
      return false;
  return true;
}

// A group member that is never asked to exchange: enough to build a shard.
class ShardOnly final : public AllToAll<double> {
public:
  ShardOnly(int rank, int size) : rank_(rank), size_(size) {}
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  std::vector<TokenBlock<double>> exchange(std::vector<TokenBlock<double>>) override {
    throw std::logic_error("not used");
  }

private:
  int rank_, size_;
};

} // namespace

TEST_CASE("same seed and stage index give identical stages", "[runtime]") {
  const ModelSpec model = mixedModel(42);
  for (int s = 0; s < 4; ++s) {
    auto a = makeStage<double>(model, s), b = makeStage<double>(model, s);
    INFO(a->describe());
    CHECK(allIdentical(parameterValues(*a), parameterValues(*b)));
    Tensor<double> x = randomTensor<double>(4, kHidden, 5), ya, yb;
    a->forward(0, x, ya);
    b->forward(0, x, yb);
    CHECK(ya.identical(yb));
  }
}

TEST_CASE("different stage index or seed gives different parameters", "[runtime]") {
  DenseStage<double> s0(smallDense(), {42, 0}), s1(smallDense(), {42, 1}), other(smallDense(), {43, 0});
  CHECK(noneIdentical(parameterValues(s0), parameterValues(s1)));
  CHECK(noneIdentical(parameterValues(s0), parameterValues(other)));
  MoeStage<double> m0(smallMoe(), {42, 0}), m1(smallMoe(), {42, 1});
  CHECK(noneIdentical(parameterValues(m0), parameterValues(m1)));
}

TEST_CASE("fp32 parameters are the rounded fp64 parameters", "[runtime]") {
  MoeStage<double> d(smallMoe(), {42, 3});
  MoeStage<float> f(smallMoe(), {42, 3});
  const auto pd = d.parameters();
  const auto pf = f.parameters();
  REQUIRE(pd.size() == pf.size());
  for (size_t i = 0; i < pd.size(); ++i)
    CHECK(tensorCast<float>(*pd[i].value).identical(*pf[i].value));
}

TEST_CASE("an expert's weights do not depend on the expert-parallel sharding", "[runtime]") {
  MoeStage<double> whole(smallMoe(), {42, 1});
  MoeStage<double> shard(smallMoe(), {42, 1}, std::make_shared<ShardOnly>(1, 2));
  CHECK(shard.firstLocalExpert() == 2);
  CHECK(shard.localExperts() == 2);
  int matched = 0;
  for (const Parameter<double> &p : shard.parameters())
    for (const Parameter<double> &q : whole.parameters())
      if (p.name == q.name) {
        INFO(p.name);
        CHECK(p.value->identical(*q.value));
        CHECK(p.expertSharded == (p.name.rfind("experts.", 0) == 0));
        ++matched;
      }
  CHECK(matched == static_cast<int>(shard.parameters().size()));
}
