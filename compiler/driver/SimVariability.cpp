#include "driver/SimVariability.h"

#include "plan/TraceProfile.h"
#include "sim/SimOutputs.h"

namespace pipec {

namespace {

// stageOf[rank][chunk]: the stage each rank's chunk holds, as the trace reader needs it.
std::vector<std::vector<int64_t>> stagesByChunk(const ScheduleIR &ir) {
  std::vector<std::vector<int64_t>> stageOf(ir.ranks.size());
  for (size_t r = 0; r < ir.ranks.size(); ++r)
    for (const Op &op : ir.ranks[r].ops) {
      if (size_t(op.chunk) >= stageOf[r].size())
        stageOf[r].resize(size_t(op.chunk) + 1, -1);
      stageOf[r][size_t(op.chunk)] = op.stage;
    }
  return stageOf;
}

bool loadTraceRatios(const ScheduleIR &ir, JitterSpec &jitter, std::string &error) {
  auto ratios = plan::readTraceRatios(jitter.traceFile, stagesByChunk(ir), error);
  if (!ratios) {
    error = "--jitter trace: " + error;
    return false;
  }
  jitter.ratios = std::move(*ratios);
  jitter.pooled.clear();
  for (const std::vector<double> &kind : jitter.ratios)
    jitter.pooled.insert(jitter.pooled.end(), kind.begin(), kind.end());
  return true;
}

} // namespace

bool analyseVariability(const ScheduleIR &ir, const CheckReport &report, const CostModel &costs,
                        const SimArgs &sim, const std::optional<Topology> &topology,
                        double tail, SimResult &result, VariabilityReport &out,
                        std::string &error) {
  for (auto [rank, factor] : sim.slow)
    if (rank >= ir.numRanks) {
      error = "--slow " + std::to_string(rank) + "=" + formatNumber(factor) + " names rank " +
              std::to_string(rank) + ", but the schedule has " + std::to_string(ir.numRanks) +
              " ranks (0 to " + std::to_string(ir.numRanks - 1) + ")";
      return false;
    }
  if (sim.jitter.active() && sim.samples * (size_t(ir.numRanks) + 1) > kMaxSampleValues) {
    error = "--samples " + std::to_string(sim.samples) + " keeps " +
            std::to_string(sim.samples * (size_t(ir.numRanks) + 1)) +
            " values (a step time and an idle time per rank per sample), over the limit of " +
            std::to_string(kMaxSampleValues) + " (256 MiB): take fewer samples";
    return false;
  }
  JitterSpec jitter = sim.jitter;
  if (jitter.kind == JitterSpec::Kind::Trace && !loadTraceRatios(ir, jitter, error))
    return false;

  auto plan = result.plan; // the plain run's plan, re-simulated below
  std::optional<LinkModel> links;
  if (topology)
    links.emplace(*topology, plan->numRanks());
  const LinkModel *linkModel = links ? &*links : nullptr;
  std::vector<double> base = slowedDurations(*plan, costs, sim.slow);
  // Under a topology the tail is each rank's traffic on its NIC after its last
  // step, sharing the links with the pipeline; otherwise it is added after.
  std::vector<double> traffic(linkModel && tail > 0 ? plan->numRanks() : 0, tail);
  SimPerturbation network{nullptr, linkModel, traffic.empty() ? nullptr : traffic.data()};

  out.jitter = jitter.describe();
  out.samples = sim.samples;
  out.seed = sim.seed;
  out.slow = sim.slow;
  out.topology = topology ? topology->name + " (" + topology->describe() + ")" : "";
  out.quietStepTime = result.makespan;
  if (!sim.slow.empty() || linkModel)
    simulate(plan, costs, result,
             {sim.slow.empty() ? nullptr : base.data(), linkModel, network.rankTraffic});
  out.stepTime = result.trafficEnd;
  if (jitter.active())
    out.jittered = runVariability(plan, costs, base, jitter, sim.samples, sim.seed, sim.threads,
                                  network);
  if (sim.sensitivity)
    out.sensitivity = rankSensitivity(plan, costs, base, out.sensitivityFactor, sim.threads,
                                      network);
  if (network.rankTraffic) { // already in every step time; the quiet one adds it
    out.tail = tail;
    out.tailShared = true;
    out.quietStepTime += tail;
  } else if (tail > 0) {
    addStepTail(out, tail);
  }
  return true;
}

} // namespace pipec
