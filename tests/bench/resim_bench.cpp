// In-process re-simulation: builds one schedule's SimulationPlan once, then times
// simulate(plan, costs, result) under a series of different cost sets, the way a
// planner re-simulates one schedule thousands of times.
//
// usage: pipec_resim_bench SCHEDULE.pipe P M [RUNS]
// prints: ops, steps, messages, plan build ms, median and best re-simulation ms
// (wall), and the median in CPU time.
#include "frontend/Compilation.h"
#include "sim/Simulator.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <string>
#include <vector>

using namespace pipec;

static double millisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

int main(int argc, char **argv) {
  if (argc < 4) {
    llvm::errs() << "usage: pipec_resim_bench SCHEDULE.pipe P M [RUNS]\n";
    return 2;
  }
  int runs = argc > 4 ? std::atoi(argv[4]) : 50;
  ElabOptions elab;
  elab.defines = {{"P", std::atoll(argv[2])}, {"M", std::atoll(argv[3])}};
  Compilation compilation(argv[1]);
  if (!compilation.runAll(elab, CheckOptions{})) {
    llvm::errs() << "pipec_resim_bench: " << argv[1] << " does not check\n";
    return 1;
  }
  const ScheduleIR &ir = *compilation.ir();
  const CheckReport &report = *compilation.report();

  auto start = std::chrono::steady_clock::now();
  auto plan = std::make_shared<const SimulationPlan>(buildSimulationPlan(ir, *report.comm));
  double buildMs = millisecondsSince(start);

  SimResult result;
  std::vector<double> times, cpuTimes; // CPU time too: wall time suffers on a loaded machine
  double checksum = 0;
  for (int i = 0; i < runs; ++i) {
    // A different cost set each time, as a planner would try.
    CostModel costs = CostModel::build(ir, {{"F", -1, 1 + 0.01 * i}, {"p2p", -1, 0.001 * i}});
    auto run = std::chrono::steady_clock::now();
    std::clock_t cpu = std::clock();
    simulate(plan, costs, result);
    cpuTimes.push_back(1000.0 * double(std::clock() - cpu) / CLOCKS_PER_SEC);
    times.push_back(millisecondsSince(run));
    checksum += result.makespan;
  }
  std::sort(times.begin(), times.end());
  std::sort(cpuTimes.begin(), cpuTimes.end());
  llvm::outs() << "ops " << ir.totalOps() << " steps " << plan->numSteps() << " messages "
               << plan->numMessages() << " plan_ms " << buildMs << " resim_median_ms "
               << times[times.size() / 2] << " resim_best_ms " << times.front()
               << " resim_cpu_median_ms " << cpuTimes[cpuTimes.size() / 2]
               << " (checksum " << checksum << ")\n";
  return 0;
}
