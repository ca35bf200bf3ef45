// support/WorkerThreads.h: a pool never asks for more threads than the cores or
// the work, and when the system refuses a thread (std::system_error, as under
// `ulimit -v` with -j 128) the work still runs to the end, on the threads that
// did start, down to the caller alone.
#include "support/WorkerThreads.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <system_error>
#include <thread>
#include <vector>

using namespace pipec;

namespace {

// Work taken from a shared counter, as the domain check takes points.
struct Queue {
  std::atomic<int> next{0}, done{0};
  int items;
  explicit Queue(int n) : items(n) {}
  void work() {
    while (next++ < items)
      ++done;
  }
};

} // namespace

TEST_CASE("thread counts clamp to the cores and the work", "[threads]") {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  CHECK(clampThreads(0, 1000000) == std::min(cores, 256u));
  CHECK(clampThreads(128, 1000000) == std::min(cores, 128u));
  CHECK(clampThreads(100000, 1000000) <= 256u);
  CHECK(clampThreads(8, 1) == 1u);
  CHECK(clampThreads(8, 0) == 1u);
}

TEST_CASE("a refused thread leaves the work to the others", "[threads]") {
  for (int allowed : {0, 1, 3}) {
    Queue queue(10000);
    std::vector<std::thread> started;
    int attempts = 0;
    auto start = [&](std::function<void()> work) {
      if (attempts++ >= allowed)
        throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
      started.emplace_back(std::move(work));
    };
    unsigned ran = runOnThreads(8, [&] { queue.work(); }, start);
    for (std::thread &t : started)
      t.join();
    CAPTURE(allowed);
    CHECK(ran == unsigned(allowed) + 1); // the caller and those the system gave
    CHECK(queue.done == 10000);          // all of the work, whatever ran it
  }
}

TEST_CASE("the pool runs every item once on real threads", "[threads]") {
  Queue queue(50000);
  unsigned ran = runOnThreads(clampThreads(4, 50000), [&] { queue.work(); });
  CHECK(ran >= 1);
  CHECK(queue.done == 50000);
}
