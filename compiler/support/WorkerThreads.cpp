#include "support/WorkerThreads.h"

#include "support/ResourceLimits.h"

#include <algorithm>
#include <system_error>
#include <thread>
#include <vector>

namespace pipec {

unsigned clampThreads(unsigned requested, size_t work) {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  unsigned wanted = requested ? std::min(requested, cores) : cores;
  wanted = std::min({wanted, limits::kMaxThreads, unsigned(std::min<size_t>(work, UINT32_MAX))});
  return std::max(1u, wanted);
}

unsigned runOnThreads(unsigned threads, const std::function<void()> &work,
                      const std::function<void(std::function<void()>)> &start) {
  std::vector<std::thread> pool;
  unsigned started = 1; // the caller
  for (unsigned j = 1; j < threads; ++j) {
    try {
      if (start) {
        start(work);
      } else {
        pool.emplace_back(work);
      }
      ++started;
    } catch (const std::system_error &) {
      break; // no more threads from the system: the ones running share the work
    }
  }
  work();
  for (std::thread &thread : pool)
    thread.join();
  return started;
}

} // namespace pipec
