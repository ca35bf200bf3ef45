// Compiled schedules of one planning session, keyed by (file, P, M, v): each
// distinct size of a schedule file is parsed, elaborated and checked once, and
// reused by every layout of that size, by every re-plan of a remedy and by
// `sim --model`. A refusal (a failed `require`, a check) is cached too.
//
// Memory is bounded by ops, the measure that IR, check report and simulation
// plan all grow with (about 80 bytes an op together: `pipec sim` of a 16M-op
// 1F1B peaks at 1.23 GB). Two budgets:
//  - kept: entries not in use are dropped, oldest first, once the cached
//    schedules together exceed it, so a long search does not hold every IR;
//  - working: the ops of compilations in flight plus every cached schedule may
//    not exceed it. A thread whose compilation would go past it first drops
//    unused entries, then waits for the other threads' compilations and uses
//    to end; alone it always proceeds (one schedule is bounded by --max-ops).
//    Issue 26's F1: two threads compiling 8M-op layouts of a global batch of
//    2^20 beside a full cache went past 2 GB.
// It also measures how fast it compiles (ops a second), so the planner can skip
// a compilation that cannot end within its time budget before starting it.
#pragma once

#include "elab/Elaborator.h"
#include "frontend/Compilation.h"
#include "plan/ActivationPeaks.h"
#include "sim/Simulator.h"
#include "support/ResourceLimits.h"

#include <array>
#include <cstdint>
#include <condition_variable>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace pipec::plan {

// One schedule at one size, ready to be costed and simulated many times.
struct CompiledSchedule {
  std::unique_ptr<Compilation> compilation; // ir() and report() are set
  std::shared_ptr<const SimulationPlan> plan;
  uint64_t ops = 0;
  // Lone ops (not halves of an overlap pair) per rank, kind (F, B, I, W) and
  // stage: the busy time they need is a lower bound on the makespan. Sparse (only
  // the stages a rank runs), so memory grows with ops, not with ranks x stages.
  struct StageOps {
    int32_t stage;
    std::array<uint32_t, 4> count; // F, B, I, W
  };
  std::vector<std::vector<StageOps>> loneOps; // [rank] -> the stages it runs, ascending
  // Per rank, the live micro-batches per stage where its activations can peak;
  // null when prepared without them (costs then bound them by the peak count).
  std::shared_ptr<const std::vector<RankActivationPeaks>> activationPeaks;
  const ScheduleIR &ir() const { return *compilation->ir(); }
  const CheckReport &report() const { return *compilation->report(); }
};

// A compilation that ran every phase (ir() and report() set), made ready to be
// costed and simulated: its simulation plan and lone-op counts. `pipec sim`
// prepares its own compilation this way, so it compiles once.
// `withActivationPeaks`: also find each rank's activation peaks per stage, which
// costing needs (`pipec sim` without --model does not).
std::shared_ptr<CompiledSchedule> prepareCompiled(std::unique_ptr<Compilation> compilation,
                                                  bool withActivationPeaks = true);

// get()'s error when limits.deadline passed during the compilation (such a
// result is not cached: a later plan with more time compiles it again).
inline constexpr const char *kPastDeadline = "the time budget ran out while compiling";

class ScheduleCache {
public:
  explicit ScheduleCache(uint64_t opBudget = 8'000'000,
                         uint64_t workingBudget = limits::kMaxOps)
      : opBudget_(opBudget), workingBudget_(workingBudget) {}

  // The schedule `file` at P, M (and v when > 0), elaborated under `limits`;
  // null with `error` set (the first error's message) when it is refused.
  // `expectedOps`: what the compilation is expected to hold (the working
  // budget reserves it until the real count is known).
  std::shared_ptr<const CompiledSchedule> get(const std::string &file, int64_t P, int64_t M,
                                              int64_t v, const ElabLimits &limits,
                                              std::string &error, uint64_t expectedOps = 0);

  // Whether (file, P, M, v) is cached: a get() that costs nothing.
  bool contains(const std::string &file, int64_t P, int64_t M, int64_t v);

  // Seconds a compilation of `ops` ops is expected to take at the rate this
  // cache measured last (ops per second of wall time, so the machine's load
  // now counts); 0 before
  // any compilation of a million ops or more was timed.
  double expectedSeconds(uint64_t ops);

  // The parameter names `file` declares (parsed once); empty with `error` set
  // when it cannot be read or parsed.
  std::vector<std::string> parameterNames(const std::string &file, std::string &error);

  size_t compilations() const { return compilations_; } // elaborations run, refused ones too

private:
  using Key = std::tuple<std::string, int64_t, int64_t, int64_t>;
  struct Entry {
    std::shared_ptr<const CompiledSchedule> compiled;
    std::string error;
  };
  void evict(uint64_t budget); // with mutex_ held: unused entries until cachedOps_ <= budget
  uint64_t opsInUse();         // with mutex_ held: cached schedules someone holds

  uint64_t opBudget_;
  uint64_t workingBudget_;
  uint64_t cachedOps_ = 0;
  uint64_t inFlightOps_ = 0;   // reserved by compilations running now
  double opsPerSecond_ = 0;    // measured; 0: not yet
  std::condition_variable released_;
  size_t compilations_ = 0;
  std::mutex mutex_;
  std::map<Key, Entry> entries_;
  std::list<Key> order_; // insertion order, for eviction
  std::map<std::string, std::pair<std::vector<std::string>, std::string>> names_;
};

} // namespace pipec::plan
