// The pieces of a training step outside the schedule: copies of a replicated
// stage take identical steps, a checkpoint restores values and optimizer state
// exactly and refuses corrupt or mismatched files, and the token sampler.
#include "exec/Trainer.h"

#include "pipert/Batch.h"
#include "pipert/Checkpoint.h"
#include "pipert/Model.h"
#include "pipert/TokenData.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <unistd.h>

using namespace pipert;

namespace {

const ModelSpec kModel = builtinModel(2, /*seed=*/5, /*hidden=*/8, /*moe=*/false, /*attention=*/true);
const BatchSpec kBatch{4, 6, 8, 11};

// Accumulates micro-batch mb's weight gradients into `stage`.
void backwardOne(Stage<double> &stage, int mb) {
  Tensor<double> y, dx;
  stage.forward(mb, microBatchInput<double>(kBatch, mb), y);
  stage.backward(mb, microBatchTarget<double>(kBatch, mb), dx);
}

bool sameValues(Stage<double> &a, Stage<double> &b) {
  std::vector<Parameter<double>> pa = a.parameters(), pb = b.parameters();
  for (size_t p = 0; p < pa.size(); ++p)
    if (!pa[p].value->identical(*pb[p].value))
      return false;
  return true;
}

std::string temporaryDir(const char *name) {
  return std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/pipert_" + name +
         "_" + std::to_string(::getpid());
}

} // namespace

TEST_CASE("two copies of a stage stay identical over optimizer steps", "[runtime][training]") {
  auto a = makeStage<double>(kModel, 0), b = makeStage<double>(kModel, 0);
  OptimizerConfig adam;
  adam.kind = OptimizerKind::AdamW;
  adam.lr = 0.01;
  adam.clipGradNorm = 0.1;
  Trainer<double> trainer(adam, {{a.get(), b.get()}});
  for (int step = 1; step <= 5; ++step) {
    a->zeroGradients();
    b->zeroGradients();
    backwardOne(*a, 0); // each copy sees different micro-batches,
    backwardOne(*b, 1);
    std::vector<Parameter<double>> pa = a->parameters(), pb = b->parameters();
    for (size_t p = 0; p < pa.size(); ++p) { // then both hold the sum, as after gradient sync
      for (size_t e = 0; e < pa[p].grad->size(); ++e)
        (*pa[p].grad)[e] += (*pb[p].grad)[e];
      *pb[p].grad = *pa[p].grad;
    }
    trainer.step(step);
    REQUIRE(sameValues(*a, *b));
  }
  auto fresh = makeStage<double>(kModel, 0);
  CHECK_FALSE(sameValues(*a, *fresh)); // the steps did move the weights
}

TEST_CASE("a checkpoint restores parameters and optimizer state exactly", "[runtime][training]") {
  auto s0 = makeStage<double>(kModel, 0), s1 = makeStage<double>(kModel, 1);
  OptimizerConfig sgd;
  sgd.momentum = 0.9;
  Trainer<double> trainer(sgd, {{s0.get(), s1.get()}});
  for (int step = 1; step <= 2; ++step) {
    s0->zeroGradients();
    s1->zeroGradients();
    backwardOne(*s0, step);
    backwardOne(*s1, step);
    trainer.step(step);
  }
  std::string dir = temporaryDir("checkpoint");
  saveCheckpoint<double>(dir, "identity", 2, {s0.get(), s1.get()},
                         {&trainer.state(s0.get()), &trainer.state(s1.get())});

  auto r0 = makeStage<double>(kModel, 0), r1 = makeStage<double>(kModel, 1);
  StageOptimizerState<double> st0, st1;
  CHECK(loadCheckpoint<double>(dir, "identity", {r0.get(), r1.get()}, {&st0, &st1}) == 2);
  CHECK(sameValues(*s0, *r0));
  CHECK(sameValues(*s1, *r1));
  REQUIRE(st1.parameters.size() == trainer.state(s1.get()).parameters.size());
  for (size_t p = 0; p < st1.parameters.size(); ++p)
    CHECK(st1.parameters[p].first.identical(trainer.state(s1.get()).parameters[p].first));

  CHECK_THROWS_WITH(loadCheckpoint<double>(dir, "other", {r0.get(), r1.get()}, {&st0, &st1}),
                    Catch::Contains("written for identity; this run is other"));
  CHECK_THROWS_WITH(loadCheckpoint<double>(dir, "identity", {r1.get(), r0.get()}, {&st0, &st1}),
                    Catch::Contains("copy 0 is of stage 0, expected stage 1"));
  CHECK_THROWS_WITH(loadCheckpoint<float>(dir, "identity", {}, {}),
                    Catch::Contains("written by an fp64 run, this run is fp32"));

  std::string file = checkpointFile(dir);
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::ofstream(file, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size() / 2));
  CHECK_THROWS_WITH(loadCheckpoint<double>(dir, "identity", {r0.get(), r1.get()}, {&st0, &st1}),
                    Catch::Contains("checksum mismatch"));
  std::ofstream(file, std::ios::binary | std::ios::trunc).write("PIPE", 4);
  CHECK_THROWS_WITH(loadCheckpoint<double>(dir, "identity", {r0.get(), r1.get()}, {&st0, &st1}),
                    Catch::Contains("not a pipert checkpoint"));
  std::remove(file.c_str());
  std::remove(dir.c_str());
}

TEST_CASE("the token sampler is seeded, in range, and targets are the next token", "[runtime][training]") {
  std::vector<uint32_t> tokens;
  for (uint32_t i = 0; i < 100; ++i)
    tokens.push_back(i);
  TokenData data(tokens, /*sequenceLength=*/10);
  bool differs = false;
  for (int64_t step = 1; step <= 20; ++step)
    for (int mb = 0; mb < 4; ++mb) {
      size_t start = data.start(3, step, mb, 0);
      CHECK(start + 10 < data.size()); // room for the sequence and its next token
      CHECK(start == data.start(3, step, mb, 0));
      differs |= start != data.start(3, step + 1, mb, 0) || start != data.start(4, step, mb, 0);
    }
  CHECK(differs);
  // Tokens are distinct and consecutive here: the target's row t is the input's row t + 1.
  Tensor<double> in = data.embedded<double>(3, 1, 0, 2, 8, 0), target = data.embedded<double>(3, 1, 0, 2, 8, 1);
  REQUIRE(in.rows() == 20);
  for (size_t t = 0; t + 1 < 10; ++t)
    for (size_t c = 0; c < 8; ++c)
      CHECK(target(t, c) == in(t + 1, c));
  CHECK_THROWS_AS(TokenData(std::vector<uint32_t>(10, 0), 10), std::invalid_argument);
}
