// --loss cross-entropy end to end without torch: a bigram language model of
// two C++ stages (stage 0 looks up token ids in an embedding table, stage 1
// maps to vocabulary logits) registered as a stage provider and run by a
// one-rank V program with an overlap pair and a split backward. The executor's
// loss and gradients must match the reference's, the reference's gradient must
// match finite differences of its loss, and training must lower the loss.
#include "TestPrograms.h"

#include "pipert/Program.h"
#include "pipert/Random.h"
#include "pipert/Reference.h"
#include "pipert/SimpleStage.h"
#include "pipert/StageRegistry.h"
#include "pipert/TokenData.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace pipert;

namespace {

constexpr int kVocab = 11, kWidth = 5;

// Stage 0: ids (tokens x 1) -> rows of the table (tokens x kWidth).
template <typename T> class EmbedStage : public SimpleStage<T> {
public:
  explicit EmbedStage(StageInit init) : SimpleStage<T>("embed", 1, kWidth, init), table_(kVocab, kWidth) {
    fillUniform(table_, streamSeed(init.seed, init.stageIndex, "table"), 1.0);
    grad_.reset(kVocab, kWidth);
  }
  std::string describe() const override { return "embed"; }
  std::vector<Parameter<T>> parameters() override { return {{"table", &table_, &grad_}}; }

private:
  void computeForward(int mb, const Tensor<T> &ids, Tensor<T> &out) override {
    out.reset(ids.rows(), kWidth);
    for (size_t r = 0; r < ids.rows(); ++r)
      for (size_t c = 0; c < kWidth; ++c)
        out(r, c) = table_(size_t(ids[r]), c);
    ids_[mb] = ids;
  }
  void computeInputGrad(int mb, const Tensor<T> &dy, Tensor<T> &dx) override {
    dx.reset(dy.rows(), 1); // ids have no gradient
    dy_[mb] = dy;
  }
  void computeWeightGrad(int mb) override {
    const Tensor<T> &ids = ids_.at(mb), &dy = dy_.at(mb);
    for (size_t r = 0; r < ids.rows(); ++r)
      for (size_t c = 0; c < kWidth; ++c)
        grad_(size_t(ids[r]), c) += dy(r, c);
  }
  void releaseMicroBatch(int mb) override {
    ids_.erase(mb);
    dy_.erase(mb);
  }
  Tensor<T> table_, grad_;
  std::map<int, Tensor<T>> ids_, dy_;
};

// Stage 1: x (tokens x kWidth) -> x W (tokens x kVocab).
template <typename T> class HeadStage : public SimpleStage<T> {
public:
  explicit HeadStage(StageInit init) : SimpleStage<T>("head", kWidth, kVocab, init), w_(kWidth, kVocab) {
    fillUniform(w_, streamSeed(init.seed, init.stageIndex, "w"), 1.0);
    grad_.reset(kWidth, kVocab);
  }
  std::string describe() const override { return "head"; }
  std::vector<Parameter<T>> parameters() override { return {{"w", &w_, &grad_}}; }

private:
  void computeForward(int mb, const Tensor<T> &x, Tensor<T> &y) override {
    y.reset(x.rows(), kVocab);
    for (size_t r = 0; r < x.rows(); ++r)
      for (size_t k = 0; k < kWidth; ++k)
        for (size_t c = 0; c < kVocab; ++c)
          y(r, c) += x(r, k) * w_(k, c);
    x_[mb] = x;
  }
  void computeInputGrad(int mb, const Tensor<T> &dy, Tensor<T> &dx) override {
    dx.reset(dy.rows(), kWidth);
    for (size_t r = 0; r < dy.rows(); ++r)
      for (size_t k = 0; k < kWidth; ++k)
        for (size_t c = 0; c < kVocab; ++c)
          dx(r, k) += dy(r, c) * w_(k, c);
    dy_[mb] = dy;
  }
  void computeWeightGrad(int mb) override {
    const Tensor<T> &x = x_.at(mb), &dy = dy_.at(mb);
    for (size_t r = 0; r < x.rows(); ++r)
      for (size_t k = 0; k < kWidth; ++k)
        for (size_t c = 0; c < kVocab; ++c)
          grad_(k, c) += x(r, k) * dy(r, c);
  }
  void releaseMicroBatch(int mb) override {
    x_.erase(mb);
    dy_.erase(mb);
  }
  Tensor<T> w_, grad_;
  std::map<int, Tensor<T>> x_, dy_;
};

template <typename T> std::unique_ptr<Stage<T>> makeBigram(const StageRequest &r) {
  StageInit init{r.seed, r.stageIndex};
  if (r.stageIndex == 0)
    return std::make_unique<EmbedStage<T>>(init);
  return std::make_unique<HeadStage<T>>(init);
}

PIPERT_REGISTER_STAGES((StageProvider{"bigram-test", "a bigram language model (tests)", makeBigram<float>,
                                      makeBigram<double>}));

using test::kV;

std::string tempPath(const char *name) {
  return std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/" + name + "_" +
         std::to_string(::getpid());
}

// Runs kV with `args`; returns the exit status and the step losses printed.
int runV(std::vector<std::string> args, std::vector<double> *losses = nullptr) {
  int status = 0;
  std::string out = test::outputOf(1, [&] { return test::runTestProgram(kV, args); }, status);
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    double loss;
    if (losses && std::sscanf(line.c_str(), "step %*d: loss %lf", &loss) == 1)
      losses->push_back(loss);
  }
  return status;
}

} // namespace

TEST_CASE("a language model trains under a pipeline with the cross-entropy loss", "[runtime][loss][program]") {
  const std::vector<std::string> lm{"--model", "bigram-test", "--loss", "cross-entropy", "--seq", "6"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), lm.begin(), lm.end());
    return more;
  };
  CHECK(runV(with({"--vocab", "11", "--check", "--dtype", "fp64", "--steps", "3", "--optimizer", "adamw",
                   "--micro-batch-size", "2"})) == 0);
  CHECK(runV(with({"--vocab", "11", "--check", "--dtype", "fp32", "--steps", "2"})) == 0);
  // Synthetic ids do not change between steps: the model learns them.
  std::vector<double> losses;
  REQUIRE(runV(with({"--vocab", "11", "--steps", "40", "--optimizer", "adamw", "--lr", "0.05"}), &losses) == 0);
  REQUIRE(losses.size() == 40);
  CHECK(losses.back() < 0.5 * losses.front());
  // Token data, checked against --vocab.
  std::string data = tempPath("pipert_lm_tokens");
  {
    std::ofstream out(data, std::ios::binary);
    for (uint16_t t = 0; t < 200; ++t) {
      uint16_t id = uint16_t((t * 7) % kVocab);
      out.write(reinterpret_cast<const char *>(&id), 2);
    }
  }
  CHECK(runV(with({"--data", data, "--check", "--dtype", "fp64", "--steps", "2"})) == 0);
  CHECK(runV(with({"--data", data, "--vocab", "10", "--dtype", "fp64"})) == 2); // the data holds id 10
  std::remove(data.c_str());
  CHECK(runV(with({"--dtype", "fp64"})) == 2);                      // synthetic ids need --vocab
  CHECK(runV({"--loss", "cross-entropy", "--vocab", "11"}) == 2);    // the built-in stages take vectors
  CHECK(runV({"--vocab", "11"}) == 2);                                // --vocab is for cross-entropy
  CHECK(runV({"--model", "bigram-test", "--dtype", "fp64"}) == 2);    // mse batches are not token ids
}

TEST_CASE("the reference's cross-entropy gradient matches finite differences of its loss", "[runtime][loss]") {
  StageRequest request;
  request.seed = 3;
  std::vector<std::unique_ptr<Stage<double>>> stages;
  for (int s = 0; s < 2; ++s) {
    request.stageIndex = s;
    stages.push_back(makeBigram<double>(request));
  }
  Reference<double> reference({stages[0].get(), stages[1].get()});
  BatchSpec batch{/*M=*/2, /*tokens=*/8, /*hidden=*/kWidth, /*seed=*/4};
  batch.loss = LossKind::CrossEntropy;
  batch.vocab = kVocab;
  batch.sequenceLength = 4;
  ReferenceResult<double> result = reference.run(batch);
  for (int s = 0; s < 2; ++s) {
    Parameter<double> p = stages[s]->parameters()[0];
    const double h = 1e-6;
    for (size_t i = 0; i < p.value->size(); ++i) {
      double saved = (*p.value)[i];
      (*p.value)[i] = saved + h;
      double plus = reference.loss(batch);
      (*p.value)[i] = saved - h;
      double minus = reference.loss(batch);
      (*p.value)[i] = saved;
      CHECK(result.gradients[s][0].value[i] == Approx((plus - minus) / (2 * h)).margin(1e-8));
    }
  }
}
