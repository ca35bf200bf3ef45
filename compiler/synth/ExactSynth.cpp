#include "synth/ExactSynth.h"

#include "cost/CostModel.h"
#include "diag/DiagnosticRenderer.h"
#include "frontend/Compilation.h"
#include "sim/Simulator.h"
#include "synth/ExactSearch.h"
#include "synth/LowerBound.h"
#include "synth/SynthText.h"
#include "synth/SynthWriter.h"
#include "synth/PlacementFamilies.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace pipec::synth {

namespace {

// The problem and the heuristic's orders, read back from its checked schedule,
// so the exact search sees the costs exactly as the front end resolved them.
RankOrders readProblem(const ScheduleIR &ir, const SynthRequest &request, SynthProblem &p) {
  CostModel model = CostModel::build(ir, request.costs);
  const int S = p.layout.stages;
  p.costs = {std::vector<double>(S), std::vector<double>(S), std::vector<double>(S),
             std::vector<double>(S)};
  for (int s = 0; s < S; ++s) {
    p.costs.F[s] = model.op(OpKind::F, s);
    p.costs.I[s] = p.split ? model.op(OpKind::I, s) : model.op(OpKind::B, s);
    p.costs.W[s] = p.split ? model.op(OpKind::W, s) : 0;
    p.costs.transfer[s] = model.transfer(s);
  }
  RankOrders orders(ir.ranks.size());
  for (size_t r = 0; r < ir.ranks.size(); ++r)
    for (const Op &op : ir.ranks[r].ops) {
      int s = op.stage, m = op.microbatch;
      if (op.kind == OpKind::F)
        orders[r].push_back(p.opId(kF, s, m));
      if (op.kind == OpKind::I || op.kind == OpKind::B)
        orders[r].push_back(p.opId(kI, s, m));
      if (op.kind == OpKind::W || op.kind == OpKind::B)
        orders[r].push_back(p.opId(kW, s, m));
    }
  return orders;
}

} // namespace

ExactOutcome synthesizeExact(const SynthRequest &request,
                             const std::function<void(const std::string &)> &progress) {
  auto started = std::chrono::steady_clock::now();
  auto deadline = started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(request.seconds));
  ExactOutcome outcome;
  SynthOutcome &out = outcome.synth;
  SynthRequest first = request;
  first.seconds = request.seconds / 4;
  SynthOutcome heuristic = synthesize(first, progress);
  if (!heuristic.ok) {
    out = heuristic;
    return outcome;
  }
  outcome.heuristic = heuristic.makespan;

  CheckOptions unbudgeted;
  unbudgeted.costs = request.costs;
  auto start = checkText("<synthesized schedule>", heuristic.text, unbudgeted, out.error);
  if (!start)
    return outcome;
  SynthProblem p;
  p.layout = makeStagePlacement(request.family, request.ranks, request.chunks, out.error);
  if (!out.error.empty())
    return outcome;
  p.microbatches = request.microbatches;
  p.budget = request.budget;
  p.split = request.split;
  p.seed = request.seed;
  RankOrders orders = readProblem(*start->ir(), request, p);
  const std::string name = start->ir()->name;
  outcome.staticBound = lowerBound(p);

  ExactResult exact = solveExact(p, &orders, heuristic.makespan, outcome.staticBound, deadline);
  outcome.optimal = exact.optimal;
  outcome.nodes = exact.nodes;
  out.bound = exact.bound;
  out.stats = heuristic.stats;
  out.stats.timedOut = !exact.optimal;
  progress(exact.optimal ? "exact: optimal after " + std::to_string(exact.nodes) + " nodes"
                         : "exact: stopped by --time after " + std::to_string(exact.nodes) +
                               " nodes; best found " + number(exact.makespan) +
                               ", proven lower bound " + number(exact.bound));

  auto header = [&](double makespan, double seconds) {
    double gap = out.bound > 0 ? 100 * (makespan - out.bound) / out.bound : 0;
    std::string how = exact.optimal ? "optimal (exact search, " : "best found (exact search stopped by --time, ";
    return std::vector<std::string>{
        "Synthesized by `" + request.commandLine + "`.",
        "Makespan " + number(makespan) + " (pipec sim), lower bound " + number(out.bound) +
            ", gap " + fixed(gap, 1) + "%; budget " + std::to_string(p.budget) +
            " activations per rank; " + how + std::to_string(exact.nodes) + " nodes in " +
            fixed(seconds, 2) + " s); heuristic " + number(outcome.heuristic) +
            ", static bound " + number(outcome.staticBound) + "."};
  };
  CheckOptions budgeted = unbudgeted;
  budgeted.maxActivations = p.budget;
  std::string body = writeSynthPipe(p, exact.orders, name, header(exact.makespan, 0));
  auto checked = checkText("<exact schedule>", body, budgeted, out.error);
  if (!checked) {
    out.error += "the exact schedule does not pass pipec check; nothing is written";
    return outcome;
  }
  CostModel model = CostModel::build(*checked->ir(), request.costs);
  SimResult sim = simulate(*checked->ir(), *checked->report(), model);
  // The search times schedules by the simulator's rules: a difference is a bug.
  if (std::abs(sim.makespan - exact.makespan) > 1e-9 * std::max(1.0, exact.makespan)) {
    out.error = "the exact search timed its schedule at " + number(exact.makespan) +
                " but pipec sim at " + number(sim.makespan) + "; nothing is written";
    return outcome;
  }
  out.makespan = sim.makespan;
  for (const RankMemory &m : checked->report()->memory)
    out.peakActivations = std::max(out.peakActivations, m.peakActivations);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  out.text = writeSynthPipe(p, exact.orders, name, header(out.makespan, out.seconds));
  out.ok = true;
  return outcome;
}

} // namespace pipec::synth
