// The all-to-all layer on its own: the local group passes blocks through, and
// the threaded test double delivers block (s -> d) to d, in source order,
// across repeated rounds.
#include "TestModels.h"
#include "pipert/ThreadedAllToAll.h"

#include <catch2/catch.hpp>

#include <thread>

using namespace pipert;
using namespace pipert::test;

TEST_CASE("local all-to-all passes its single block through", "[runtime]") {
  LocalAllToAll<float> local;
  CHECK((local.size() == 1 && local.rank() == 0));
  std::vector<TokenBlock<float>> out(1);
  out[0].rows = Tensor<float>(2, 3, 1.5f);
  out[0].tags = {4, 5};
  std::vector<TokenBlock<float>> in = local.exchange(out);
  REQUIRE(in.size() == 1);
  CHECK(in[0].rows.identical(out[0].rows));
  CHECK(in[0].tags == out[0].tags);
}

TEST_CASE("threaded all-to-all delivers every block to its destination", "[runtime]") {
  constexpr int n = 3, rounds = 5;
  ThreadedAllToAllGroup<double> group(n);
  std::vector<std::shared_ptr<AllToAll<double>>> ends;
  for (int r = 0; r < n; ++r)
    ends.push_back(group.endpoint(r));
  std::vector<int> wrong(n, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      for (int round = 0; round < rounds; ++round) {
        std::vector<TokenBlock<double>> out(n);
        for (int d = 0; d < n; ++d) // block (r -> d) has r+1 rows, valued 100 round + 10 r + d
          out[d].rows = Tensor<double>(static_cast<size_t>(r + 1), 2, 100.0 * round + 10 * r + d);
        std::vector<TokenBlock<double>> in = ends[r]->exchange(std::move(out));
        for (int s = 0; s < n; ++s)
          if (in[s].rows.rows() != static_cast<size_t>(s + 1) || in[s].rows[0] != 100.0 * round + 10 * s + r)
            ++wrong[r];
      }
    });
  for (std::thread &t : threads)
    t.join();
  CHECK(wrong == std::vector<int>(n, 0));
}
