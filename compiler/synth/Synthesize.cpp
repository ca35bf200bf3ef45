#include "synth/Synthesize.h"

#include "cost/CostModel.h"
#include "diag/DiagnosticRenderer.h"
#include "driver/Compilation.h"
#include "sim/Simulator.h"
#include "synth/Evaluator.h"
#include "synth/FilePlacement.h"
#include "synth/ListScheduler.h"
#include "synth/SearchBound.h"
#include "synth/SynthWriter.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace pipec::synth {

namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

// Fixed decimals, for seconds and percentages.
std::string fixed(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string scheduleName(const SynthRequest &r, const std::string &fileSchedule) {
  static const char *family[] = {"one", "interleaved", "v", "bidirectional", ""};
  std::string base = r.family == PlacementFamily::File ? fileSchedule : family[int(r.family)];
  return "synth_" + base + "_P" + std::to_string(r.ranks) + "_M" + std::to_string(r.microbatches);
}

// Every op in an order that respects all dependencies (forwards down the
// stages, then backwards up): what the front end needs to resolve the costs.
RankOrders topologicalOrders(const SynthProblem &p) {
  RankOrders orders(p.layout.ranks);
  for (int s = 0; s < p.layout.stages; ++s)
    for (int m = 0; m < p.microbatches; ++m)
      orders[p.layout.rankOf(s, m)].push_back(p.opId(kF, s, m));
  for (int s = p.layout.stages - 1; s >= 0; --s)
    for (int m = 0; m < p.microbatches; ++m) {
      orders[p.layout.rankOf(s, m)].push_back(p.opId(kI, s, m));
      orders[p.layout.rankOf(s, m)].push_back(p.opId(kW, s, m));
    }
  return orders;
}

// Runs the front end and the checks on `text`; on failure, the diagnostics.
std::unique_ptr<Compilation> checkText(const std::string &name, const std::string &text,
                                       const CheckOptions &options, std::string &error) {
  auto compilation = Compilation::fromText(name, text);
  if (compilation->runAll(ElabOptions(), options) && !compilation->diags().hasErrors())
    return compilation;
  llvm::raw_string_ostream out(error);
  renderText(compilation->diags(), out, false);
  return nullptr;
}

std::vector<ListVariant> variants(uint64_t seed) {
  std::vector<ListVariant> all;
  const int orders[][3] = {{kI, kF, kW}, {kF, kI, kW}, {kI, kW, kF}};
  for (const auto &order : orders)
    for (bool depthFirst : {true, false})
      for (double window : {0.0, 0.5})
        for (int slack : {-1, 0, 1, 2}) {
          ListVariant v;
          std::copy(order, order + 3, v.order);
          v.depthFirst = depthFirst;
          v.window = window;
          v.slack = slack;
          all.push_back(v);
        }
  size_t fixed = all.size();
  for (uint64_t k = 0; k < 16; ++k) {
    ListVariant v = all[(k * 7) % fixed];
    v.noise = seed * 1000003 + k + 1;
    all.push_back(v);
  }
  return all;
}

} // namespace

SynthOutcome synthesize(const SynthRequest &request,
                        const std::function<void(const std::string &)> &progress) {
  auto started = std::chrono::steady_clock::now();
  auto deadline = started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(request.seconds));
  SynthOutcome outcome;
  SynthProblem p;
  SynthRequest shape = request; // ranks and micro-batches as the placement has them
  std::string fileSchedule;
  if (request.family == PlacementFamily::File) {
    FileLayout file = layoutFromFile(request.placementFile, request.defines, kMaxRanks,
                                     kMaxMicrobatches, outcome.error);
    if (!outcome.error.empty())
      return outcome;
    p.layout = std::move(file.layout);
    shape.ranks = p.layout.ranks;
    shape.microbatches = file.microbatches;
    fileSchedule = file.name;
    if (3 * int64_t(p.layout.stages) * shape.microbatches > kMaxOps) {
      outcome.error = "--placement " + request.placementFile + ": stages * M is too large for a "
                      "search (at most " + std::to_string(kMaxOps / 3) + " stage micro-batches)";
      return outcome;
    }
  } else {
    p.layout = makeLayout(request.family, request.ranks, request.chunks, request.microbatches,
                          outcome.error);
    if (!outcome.error.empty())
      return outcome;
  }
  p.microbatches = shape.microbatches;
  p.budget = request.budget;
  p.split = request.split;
  p.overlap = request.overlap;
  p.seed = request.seed;
  p.seconds = request.seconds;
  p.iterations = request.iterations;
  std::string name = scheduleName(shape, fileSchedule);

  // The costs, as the front end resolves them for this layout.
  const int S = p.layout.stages;
  p.costs = {std::vector<double>(S, 1), std::vector<double>(S, 1), std::vector<double>(S, 0),
             std::vector<double>(S, 0), {}, {}};
  std::vector<double> backward(S, 1);
  CheckOptions unbudgeted;
  unbudgeted.costs = request.costs;
  std::string skeleton = writeSynthPipe(p, topologicalOrders(p), name, {});
  auto base = checkText("<synth>", skeleton, unbudgeted, outcome.error);
  if (!base)
    return outcome;
  CostModel model = CostModel::build(*base->ir(), request.costs);
  for (int s = 0; s < S; ++s) {
    backward[s] = model.op(OpKind::B, s);
    p.costs.F[s] = model.op(OpKind::F, s);
    p.costs.I[s] = p.split ? model.op(OpKind::I, s) : backward[s];
    p.costs.W[s] = p.split ? model.op(OpKind::W, s) : 0;
    p.costs.transfer[s] = model.transfer(s);
  }
  if (p.overlap) {
    p.costs.pairI.assign(size_t(S) * S, 0);
    p.costs.pairB.assign(size_t(S) * S, 0);
    for (int f = 0; f < S; ++f)
      for (int b = 0; b < S; ++b) {
        size_t at = size_t(f) * S + b;
        p.costs.pairB[at] = model.pair(f, OpKind::B, b);
        p.costs.pairI[at] = p.split ? model.pair(f, OpKind::I, b) : p.costs.pairB[at];
      }
  }
  outcome.bound = searchBound(p);

  // Construct, keep the few best distinct starts, improve each (local search
  // stalls on plateaus, so other starts get a shorter walk too).
  constexpr size_t kStarts = 4;
  Evaluator evaluator(p);
  std::vector<std::pair<double, RankOrders>> starts;
  for (const ListVariant &variant : variants(p.seed)) {
    if (!starts.empty() && std::chrono::steady_clock::now() > deadline) {
      outcome.stats.timedOut = true;
      break;
    }
    std::optional<RankOrders> orders = listSchedule(p, variant);
    if (!orders)
      continue;
    double next = evaluator.makespan(*orders);
    if (next == kInfeasible ||
        std::any_of(starts.begin(), starts.end(), [&](const auto &s) { return s.second == *orders; }))
      continue;
    starts.emplace_back(next, std::move(*orders));
    std::stable_sort(starts.begin(), starts.end(),
                     [](const auto &a, const auto &b) { return a.first < b.first; });
    if (starts.size() > kStarts)
      starts.pop_back();
  }
  if (starts.empty()) {
    outcome.error = "no schedule fits the budget of " + std::to_string(p.budget) +
                    " activations per rank on this placement (a rank holding k stages "
                    "needs at least k); raise --max-activations";
    return outcome;
  }
  double span = starts.front().first;
  RankOrders best = starts.front().second;
  progress("constructed: makespan " + number(span) + ", lower bound " + number(outcome.bound));
  SynthProblem each = p;
  for (size_t i = 0; i < starts.size(); ++i) {
    each.seed = p.seed + i;
    each.iterations = i == 0 ? p.iterations : p.iterations / 4; // the best start gets the most
    auto &[startSpan, orders] = starts[i];
    double found = localSearch(each, orders, startSpan, outcome.bound, deadline, outcome.stats,
                               [&](double better) {
                                 if (better < span)
                                   progress("improved: makespan " + number(better));
                               });
    if (found < span)
      span = found, best = orders;
  }

  // Write, then let the real checks and simulator judge it.
  auto header = [&](double makespan, double seconds) {
    double gap = outcome.bound > 0 ? 100 * (makespan - outcome.bound) / outcome.bound : 0;
    return std::vector<std::string>{
        "Synthesized by `" + request.commandLine + "`.",
        "Makespan " + number(makespan) + " (pipec sim), lower bound " + number(outcome.bound) +
            ", gap " + fixed(gap, 1) + "%; budget " + std::to_string(p.budget) +
            " activations per rank; seed " + std::to_string(p.seed) + "; " +
            std::to_string(outcome.stats.tried) + " candidates (" +
            std::to_string(outcome.stats.feasible) + " feasible) in " + fixed(seconds, 2) + " s" +
            (outcome.stats.timedOut ? " (stopped by --time)" : "") + "."};
  };
  CheckOptions budgeted = unbudgeted;
  budgeted.maxActivations = p.budget;
  std::string body = writeSynthPipe(p, best, name, header(span, 0));
  auto checked = checkText("<synthesized schedule>", body, budgeted, outcome.error);
  if (!checked) {
    outcome.error += "the synthesized schedule does not pass pipec check; nothing is written";
    return outcome;
  }
  SimResult sim = simulate(*checked->ir(), *checked->report(), model);
  outcome.makespan = sim.makespan;
  // The search times messages without channel contention; say when that mattered.
  if (std::abs(sim.makespan - span) > 1e-9 * std::max(1.0, span))
    progress("the simulator's makespan " + number(sim.makespan) + " differs from the search's " +
             number(span) + " (messages queue on their channels)");
  for (const RankMemory &m : checked->report()->memory)
    outcome.peakActivations = std::max(outcome.peakActivations, m.peakActivations);
  outcome.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  outcome.text = writeSynthPipe(p, best, name, header(outcome.makespan, outcome.seconds));
  outcome.ok = true;
  return outcome;
}

} // namespace pipec::synth
