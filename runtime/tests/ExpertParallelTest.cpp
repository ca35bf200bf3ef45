// Expert parallelism: an MoE stage sharded over a group of 2 or 4 participants
// (threads, via ThreadedAllToAll.h) computes what one unsharded stage computes
// for the same micro-batches. Outputs and input gradients are bit-identical
// (each token's arithmetic is the same); replicated weights' gradients summed
// over the group are bit-identical; expert gradients, whose token sums are
// grouped differently, agree to 1e-12.
#include "TestModels.h"
#include "pipert/ThreadedAllToAll.h"

#include "pipert/Gradients.h"

#include <catch2/catch.hpp>

#include <exception>
#include <map>
#include <thread>

using namespace pipert;
using namespace pipert::test;

namespace {

// Runs body(r) on n threads; rethrows the first exception after all joined.
void runParticipants(int n, const std::function<void(int)> &body) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (const std::exception_ptr &e : errors)
    if (e)
      std::rethrow_exception(e);
}

void checkExpertParallel(int epSize, WeightGrad when) {
  const MoeConfig config = smallMoe(); // 4 experts
  const StageInit init{31, 2};
  std::vector<Tensor<double>> x, dy;
  for (int r = 0; r < epSize; ++r) { // uneven token counts: uneven blocks
    x.push_back(randomTensor<double>(static_cast<size_t>(5 + r), kHidden, 100 + static_cast<uint64_t>(r)));
    dy.push_back(randomTensor<double>(static_cast<size_t>(5 + r), kHidden, 200 + static_cast<uint64_t>(r)));
  }

  // One unsharded stage sees participant r's tokens as micro-batch r.
  MoeStage<double> whole(config, init);
  std::vector<Tensor<double>> yWhole(x.size()), dxWhole(x.size());
  for (int r = 0; r < epSize; ++r)
    whole.forward(r, x[r], yWhole[r]);
  for (int r = 0; r < epSize; ++r)
    whole.backward(r, dy[r], dxWhole[r]);

  ThreadedAllToAllGroup<double> group(epSize);
  std::vector<std::unique_ptr<MoeStage<double>>> shards;
  for (int r = 0; r < epSize; ++r)
    shards.push_back(std::make_unique<MoeStage<double>>(config, init, group.endpoint(r)));
  std::vector<Tensor<double>> y(x.size()), dx(x.size());
  runParticipants(epSize, [&](int r) {
    MoeStage<double> &s = *shards[r];
    s.forward(0, x[r], y[r]);
    if (when == WeightGrad::Now) {
      s.backward(0, dy[r], dx[r]);
    } else {
      s.backwardInput(0, dy[r], dx[r]);
      s.backwardWeight(0);
    }
  });

  for (int r = 0; r < epSize; ++r) {
    INFO("participant " << r);
    CHECK(y[r].identical(yWhole[r]));
    CHECK(dx[r].identical(dxWhole[r]));
    CHECK(shards[r]->storedMicroBatches() == 0);
  }

  // Replicated: summed over the group in rank order. Experts: from their owner.
  std::map<std::string, Tensor<double>> merged;
  for (int r = 0; r < epSize; ++r)
    for (const Parameter<double> &p : shards[r]->parameters()) {
      auto it = merged.find(p.name);
      if (it == merged.end())
        merged.emplace(p.name, *p.grad);
      else {
        CHECK_FALSE(p.expertSharded);
        for (size_t i = 0; i < p.grad->size(); ++i)
          it->second[i] += (*p.grad)[i];
      }
    }
  for (const Parameter<double> &p : whole.parameters()) {
    INFO(p.name);
    REQUIRE(merged.count(p.name) == 1);
    if (p.expertSharded)
      CHECK(relativeError(*p.grad, merged.at(p.name)) < 1e-12);
    else
      CHECK(p.grad->identical(merged.at(p.name)));
  }
  CHECK(merged.size() == whole.parameters().size());
}

} // namespace

TEST_CASE("expert-parallel group of 2 matches the unsharded stage", "[runtime]") {
  checkExpertParallel(2, WeightGrad::Now);
}

TEST_CASE("expert-parallel group of 4 with split backward matches the unsharded stage", "[runtime]") {
  checkExpertParallel(4, WeightGrad::Deferred);
}
