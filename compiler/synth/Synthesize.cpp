#include "synth/Synthesize.h"
#include "synth/SynthText.h"

#include "cost/CostModel.h"
#include "diag/DiagnosticRenderer.h"
#include "frontend/Compilation.h"
#include "sim/Simulator.h"
#include "synth/CandidateEvaluator.h"
#include "synth/FilePlacement.h"
#include "synth/ListScheduler.h"
#include "synth/SearchBound.h"
#include "synth/SynthWriter.h"
#include "synth/PlacementFamilies.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace pipec::synth {

namespace {

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
  for (size_t k = 0; k < fixed; k += 5) { // crossing flows can deadlock the budget otherwise
    ListVariant v = all[k];
    v.wholePath = true;
    all.push_back(v);
  }
  for (uint64_t k = 0; k < 16; ++k) {
    ListVariant v = all[(k * 7) % fixed];
    v.noise = seed * 1000003 + k + 1;
    all.push_back(v);
  }
  return all;
}

// Warm-up lengths and W hold-backs of the library's schedules, for any
// layout: with c stages on a rank at distance d from the pipeline's entry,
// 1F1B's c(P-d)-1, interleaved 1F1B's 2(P-d-1)+(c-1)P, ZB-V's cP-1, DualPipe's
// P and the budget's own limit, each a little shorter or longer; W held back
// 0 times (ZB-V), d times (ZB-H1) or as often as the budget allows.
std::vector<PhasedVariant> phasedVariants(const SynthProblem &p) {
  const StagePlacement &l = p.layout;
  const int P = l.ranks;
  std::vector<PhasedVariant> all;
  auto seen = [&](const PhasedVariant &v) {
    return std::any_of(all.begin(), all.end(), [&](const PhasedVariant &o) {
      return o.warmup == v.warmup && o.defer == v.defer && o.depthFirst == v.depthFirst &&
             o.sequence == v.sequence && o.leadF == v.leadF && o.phaseF == v.phaseF &&
             o.drainInputs == v.drainInputs;
    });
  };
  using Sequence = PhasedVariant::Sequence;
  // The family's own library shape first: the search stops at the bound.
  std::vector<Sequence> sequences = {Sequence::Arrival, Sequence::Lead, Sequence::Groups,
                                     Sequence::Phases};
  std::vector<int> bases = {0, 1, 2, 3, 4};
  switch (l.family) {
  case PlacementFamily::Interleaved:
    sequences = {Sequence::Groups, Sequence::Arrival, Sequence::Lead, Sequence::Phases};
    bases = {1, 0, 2, 3, 4};
    break;
  case PlacementFamily::V:
    sequences = {Sequence::Phases, Sequence::Arrival, Sequence::Lead, Sequence::Groups};
    bases = {2, 0, 1, 3, 4};
    break;
  case PlacementFamily::Bidirectional:
    sequences = {Sequence::Phases, Sequence::Lead, Sequence::Arrival, Sequence::Groups};
    bases = {3, 4, 0, 1, 2};
    break;
  default:
    break;
  }
  for (Sequence sequence : sequences)
  for (int base : bases)
    for (int offset : {0, -1, 1, 2})
      for (int hold = 0; hold < (p.split ? 3 : 1); ++hold)
        for (int flavour = 0; flavour < 3; ++flavour) {
          bool depthFirst = flavour != 1, drain = flavour == 2;
          if ((!depthFirst && sequence != Sequence::Arrival) || (drain && !p.split))
            continue;
          PhasedVariant v;
          v.depthFirst = depthFirst;
          v.drainInputs = drain;
          v.sequence = sequence;
          bool twoWays = l.flows.size() == 2;
          for (int r = 0; r < P; ++r) {
            int c = 0, d = r;
            for (int m = 0; m < p.microbatches; ++m)
              c = std::max(c, l.stagesOn(r, m));
            if (twoWays)
              d = std::min(r, P - 1 - r);
            // ZB-V's first stage leads by 2(P-d)-1 forwards, DualPipe's own
            // flow by P-2d-1; their backwards by P-d and P/2-d.
            v.leadF.push_back(std::max(1, twoWays ? P - 2 * d - 1 : c * (P - d) - 1));
            v.leadI.push_back(std::max(1, twoWays ? P / 2 - d : P - d));
            // ZB-V: 2(P-d)-1 down, d in turn, P-d up; DualPipe: P-2d-2 own,
            // d+1 in turn (own first), P/2-d-1 other.
            v.phaseF.push_back(twoWays ? std::array<int, 3>{std::max(0, P - 2 * d - 2), d + 1,
                                                            std::max(0, P / 2 - d - 1)}
                                       : std::array<int, 3>{2 * (P - d) - 1, d, P - d});
            v.ownFirst = twoWays;
            int64_t w = base == 0   ? c * (P - d) - 1
                        : base == 1 ? 2 * (P - d - 1) + (c - 1) * P
                        : base == 2 ? c * P - 1
                        : base == 3 ? P
                                    : p.budget - 1;
            w = std::clamp<int64_t>(w + offset, 0, std::max<int64_t>(0, p.budget - 1));
            int64_t room = std::max<int64_t>(0, p.budget - 1 - w);
            int64_t defer = hold == 0 ? 0 : hold == 1 ? std::min<int64_t>(d, room) : room;
            v.warmup.push_back(int(w));
            v.defer.push_back(int(defer));
          }
          if (!seen(v))
            all.push_back(std::move(v));
        }
  return all;
}

// The costs as the front end read them warn of what synth would otherwise take
// silently (W larger than B, say): pass the warnings on, without the skeleton's
// locations, which are synth's own text.
void reportCostWarnings(Compilation &base,
                        const std::function<void(const std::string &)> &progress) {
  for (const Diagnostic &d : base.diags().diagnostics())
    if (d.severity == Severity::Warning)
      progress("warning: " + d.message + " [" + diagInfo(d.kind).name + "]");
}

// Why the costs cannot be searched (a sum of finite costs overflows a double:
// every makespan would be infinite, and no schedule could be compared), or "".
std::string overflowingCosts(const SynthProblem &p) {
  const StageCosts &c = p.costs;
  double total = 0;
  for (int s = 0; s < p.layout.stages; ++s)
    total += double(p.microbatches) * (c.F[s] + c.I[s] + c.W[s]) + c.transfer[s];
  for (double pair : c.pairB)
    total = std::max(total, pair);
  for (double pair : c.pairI)
    total = std::max(total, pair);
  if (std::isfinite(total))
    return "";
  return "[NonFiniteResult] the costs overflow: one step's work (M times F + I + W over the "
         "stages, and the transfers) sums to " + number(total) +
         ", more than a double holds (about 1.8e308); scale the costs down";
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
    p.layout = makeStagePlacement(request.family, request.ranks, request.chunks, request.microbatches,
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
  p.deadline = deadline;
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
  reportCostWarnings(*base, progress);
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
  if (std::string overflow = overflowingCosts(p); !overflow.empty()) {
    outcome.error = overflow;
    return outcome;
  }
  outcome.bound = searchBound(p);

  // Construct, keep the few best distinct starts, improve each (local search
  // stalls on plateaus, so other starts get a shorter walk too).
  constexpr size_t kStarts = 4;
  CandidateEvaluator evaluator(p);
  std::vector<std::pair<double, RankOrders>> starts;
  // Phased variants first (they are the library's shapes), then the greedy
  // ones; a start at the bound ends the construction.
  // With --overlap every construction runs twice, pairing and not: greedy
  // pairing can lose to the best schedule without pairs.
  std::vector<PhasedVariant> phased = phasedVariants(p);
  std::vector<ListVariant> greedy = variants(p.seed);
  SynthProblem unpaired = p;
  unpaired.overlap = false;
  size_t perPass = phased.size() + greedy.size();
  for (size_t k = 0; k < (p.overlap ? 2 : 1) * perPass; ++k) {
    if (!starts.empty() && (p.pastDeadline() ||
                            starts.front().first <= outcome.bound + 1e-9 * outcome.bound)) {
      outcome.stats.timedOut = p.pastDeadline();
      break;
    }
    // Until a first schedule exists, constructions run to their end whatever
    // --time says (synth always answers with a schedule when one fits: past
    // --time by at most one construction); after it, each stops at the deadline.
    SynthProblem q = k < perPass ? p : unpaired;
    if (starts.empty())
      q.deadline = std::chrono::steady_clock::time_point::max();
    size_t v = k % perPass;
    std::optional<RankOrders> orders = v < phased.size()
                                           ? phasedSchedule(q, phased[v])
                                           : listSchedule(q, greedy[v - phased.size()]);
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
  progress("constructed: makespan " + number(span) +
           (outcome.bound > 0 ? ", lower bound " + number(outcome.bound) : ""));
  SynthProblem each = p;
  for (size_t i = 0; i < starts.size(); ++i) {
    if (span <= outcome.bound * (1 + 1e-12)) // at the bound: nothing can beat it
      break;
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
  // The bound is printed only when one was proven (searchBound returns 0 otherwise).
  auto header = [&](double makespan, double seconds) {
    double gap = outcome.bound > 0 ? 100 * (makespan - outcome.bound) / outcome.bound : 0;
    std::string bound = outcome.bound > 0 ? ", lower bound " + number(outcome.bound) + ", gap " +
                                                fixed(gap, 1) + "%"
                                          : "";
    return std::vector<std::string>{
        "Synthesized by `" + request.commandLine + "`.",
        "Makespan " + number(makespan) + " (pipec sim)" + bound + "; budget " +
            std::to_string(p.budget) +
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
  if (!std::isfinite(sim.makespan)) {
    outcome.error = "[NonFiniteResult] the synthesized schedule's makespan overflows to " +
                    number(sim.makespan) + " (its costs' sums are too large for a double); "
                    "scale the costs down";
    return outcome;
  }
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
