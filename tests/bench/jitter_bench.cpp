// `pipec sim --jitter` at scale: builds one schedule's SimulationPlan, then times
// (a) the plain re-simulation, (b) one jittered sample (a lognormal draw per step,
// then the same loop), and (c) runVariability's N samples on 1 and on T threads,
// in CPU time as well as wall time (wall time suffers on a loaded machine). It
// also checks that 1 and T threads give the same samples.
//
// usage: pipec_jitter_bench SCHEDULE.pipe P M [SAMPLES] [THREADS]
#include "frontend/Compilation.h"
#include "sim/Variability.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>

using namespace pipec;

namespace {

struct Timed {
  double wallMs, cpuMs;
};

template <typename F> Timed timed(F f) {
  auto wall = std::chrono::steady_clock::now();
  std::clock_t cpu = std::clock();
  f();
  return {std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall).count(),
          1000.0 * double(std::clock() - cpu) / CLOCKS_PER_SEC};
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 4) {
    llvm::errs() << "usage: pipec_jitter_bench SCHEDULE.pipe P M [SAMPLES] [THREADS]\n";
    return 2;
  }
  size_t samples = argc > 4 ? size_t(std::atoll(argv[4])) : 1000;
  unsigned threads = argc > 5 ? unsigned(std::atoi(argv[5])) : 2;
  ElabOptions elab;
  elab.defines = {{"P", std::atoll(argv[2])}, {"M", std::atoll(argv[3])}};
  Compilation compilation(argv[1]);
  if (!compilation.runAll(elab, CheckOptions{})) {
    llvm::errs() << "pipec_jitter_bench: " << argv[1] << " does not check\n";
    return 1;
  }
  const ScheduleIR &ir = *compilation.ir();
  auto plan = std::make_shared<const SimulationPlan>(
      buildSimulationPlan(ir, *compilation.report()->comm));
  CostModel costs = CostModel::build(ir, {});
  std::vector<double> base = slowedDurations(*plan, costs, {});
  JitterSpec spec;
  spec.kind = JitterSpec::Kind::LogNormal;
  spec.cv = 0.1;

  SimResult result;
  simulate(plan, costs, result); // warm: allocations happen once
  std::vector<double> plainCpu;
  for (int i = 0; i < 20; ++i)
    plainCpu.push_back(timed([&] { simulate(plan, costs, result); }).cpuMs);
  std::sort(plainCpu.begin(), plainCpu.end());

  VariabilityResult one, many;
  Timed single = timed([&] { one = runVariability(plan, costs, base, spec, samples, 1, 1); });
  Timed parallel =
      timed([&] { many = runVariability(plan, costs, base, spec, samples, 1, threads); });
  double perSample = single.cpuMs / double(samples);
  double plainMs = plainCpu[plainCpu.size() / 2];
  auto ms = [](double v) { return llvm::format("%.2f", v); };
  llvm::outs() << "ops " << ir.totalOps() << " steps " << plan->numSteps() << " samples " << samples
               << "\nplain re-simulation: median " << ms(plainMs) << " ms CPU"
               << "\none jittered sample: " << ms(perSample) << " ms CPU ("
               << ms(perSample / plainMs) << " x the plain run)"
               << "\n" << samples << " samples, 1 thread: " << ms(single.wallMs) << " ms wall, "
               << ms(single.cpuMs) << " ms CPU"
               << "\n" << samples << " samples, " << threads << " threads: " << ms(parallel.wallMs)
               << " ms wall, " << ms(parallel.cpuMs) << " ms CPU"
               << "\nsame samples on 1 and " << threads << " threads: "
               << (one.stepTimes == many.stepTimes ? "yes" : "NO") << "\nstep time mean "
               << ms(one.stepTime.mean) << " p99 " << ms(one.stepTime.p99) << "\n";
  return one.stepTimes == many.stepTimes ? 0 : 1;
}
