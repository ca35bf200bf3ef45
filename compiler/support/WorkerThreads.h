// Runs one function on a pool of threads that clamps to what the machine gives:
// at most the cores (and limits::kMaxThreads), at most as many as there is work
// for, and fewer when the system refuses to start one (std::system_error from
// std::thread, as under `ulimit -v` or a process limit) — the work then runs on
// the threads that did start, down to the calling thread alone. A pool never
// aborts the process. Used by every command that checks in parallel (check's
// parameter domains) and available to the planner.
#pragma once

#include <functional>

namespace pipec {

// How many threads to use for `requested` (0: every core), given `work` items.
unsigned clampThreads(unsigned requested, size_t work);

// Runs `work` on `threads` threads (the caller's included) and waits for them;
// `work` must take its items from a shared queue, so that any number of threads
// finishes it. Returns the number of threads that ran. `start` starts one thread
// (std::thread by default; tests pass one that fails).
unsigned runOnThreads(unsigned threads, const std::function<void()> &work,
                      const std::function<void(std::function<void()>)> &start = nullptr);

} // namespace pipec
