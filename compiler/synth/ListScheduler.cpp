#include "synth/ListScheduler.h"

#include <algorithm>
#include <limits>
#include <random>

namespace pipec::synth {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

struct State {
  const SynthProblem &p;
  std::vector<double> end;                    // op -> end time, -1 not run
  std::vector<double> free;                   // rank -> free at
  std::vector<int64_t> live, reserved;        // rank -> activations held / promised
  std::vector<std::vector<char>> admitted;    // rank -> mb -> entered
  std::vector<std::vector<int>> channel;      // sent, in order
  std::vector<size_t> consumed;               // per channel
  std::vector<std::vector<int>> available;    // rank -> ops whose inputs are done
  RankOrders orders;

  std::vector<int64_t> limit;                 // rank -> activations it may admit up to
  // Admission: a micro-batch enters a rank only with room for all its stages
  // there (no budget deadlock); else only the budget itself is kept.
  bool reserve = true;
  // A micro-batch enters the pipeline only with room on every rank it will
  // visit: no budget deadlock even when flows cross (bidirectional).
  bool wholePath = false;

  State(const SynthProblem &problem, int slack) : p(problem) {
    const StagePlacement &l = p.layout;
    for (int r = 0; r < l.ranks; ++r) {
      int64_t chunks = 0;
      for (int m = 0; m < p.microbatches; ++m)
        chunks = std::max<int64_t>(chunks, l.stagesOn(r, m));
      // A rank's distance from the pipeline's entry: its rank, or for a second
      // flow entering at the other end, the smaller of the two.
      int depth = r;
      for (const FlowPlacement &flow : l.flows)
        depth = std::min(depth, flow.stageRank[0] == 0 ? r : l.ranks - 1 - r);
      limit.push_back(slack < 0 ? p.budget
                                : std::min<int64_t>(p.budget, std::max<int64_t>(
                                      chunks, chunks * (l.ranks - depth) + slack)));
    }
    end.assign(p.numOps(), -1);
    free.assign(l.ranks, 0);
    live.assign(l.ranks, 0);
    reserved.assign(l.ranks, 0);
    admitted.assign(l.ranks, std::vector<char>(p.microbatches, 0));
    channel.assign(size_t(l.ranks) * l.ranks * 2, {});
    consumed.assign(channel.size(), 0);
    available.assign(l.ranks, {});
    orders.assign(l.ranks, {});
    for (int m = 0; m < p.microbatches; ++m)
      available[l.rankOf(0, m)].push_back(p.opId(kF, 0, m));
  }

  int channelOf(int from, int to, int gradient) const {
    return (from * p.layout.ranks + to) * 2 + gradient;
  }
  // The input message of `id` and its channel, or -1 when its inputs are local.
  int inputChannel(int id, int &producer) const {
    const StagePlacement &l = p.layout;
    int kind = p.kindOf(id), s = p.stageOf(id), m = p.mbOf(id), r = l.rankOf(s, m);
    if (kind == kF && s > 0 && l.rankOf(s - 1, m) != r) {
      producer = p.opId(kF, s - 1, m);
      return channelOf(l.rankOf(s - 1, m), r, 0);
    }
    if (kind == kI && s + 1 < l.stages && l.rankOf(s + 1, m) != r) {
      producer = p.opId(kI, s + 1, m);
      return channelOf(l.rankOf(s + 1, m), r, 1);
    }
    return -1;
  }
  double earliestStart(int id) const {
    const StagePlacement &l = p.layout;
    int kind = p.kindOf(id), s = p.stageOf(id), m = p.mbOf(id), r = l.rankOf(s, m);
    double at = free[r];
    auto input = [&](int dep) {
      double t = end[dep];
      if (p.rankOf(dep) != r)
        t += p.costs.transfer[p.stageOf(dep)];
      at = std::max(at, t);
    };
    if (kind == kF && s > 0) input(p.opId(kF, s - 1, m));
    if (kind == kI) {
      input(p.opId(kF, s, m));
      if (s + 1 < l.stages) input(p.opId(kI, s + 1, m));
    }
    if (kind == kW) input(p.opId(kI, s, m));
    return at;
  }
  bool allowed(int id) const {
    int r = p.rankOf(id), m = p.mbOf(id);
    if (p.kindOf(id) == kF && wholePath && p.stageOf(id) == 0 && !admitted[r][m]) {
      for (int q = 0; q < p.layout.ranks; ++q)
        if (live[q] + reserved[q] + p.layout.stagesOn(q, m) > limit[q])
          return false;
      return true;
    }
    if (p.kindOf(id) == kF && (reserve ? !admitted[r][m] && live[r] + reserved[r] +
                                              p.layout.stagesOn(r, m) > limit[r]
                                        : live[r] >= limit[r]))
      return false;
    int producer;
    int c = inputChannel(id, producer);
    return c < 0 || (consumed[c] < channel[c].size() && channel[c][consumed[c]] == producer);
  }
  // The ops `id` completes the inputs of, once it has run.
  void release(int id) {
    const StagePlacement &l = p.layout;
    int kind = p.kindOf(id), s = p.stageOf(id), m = p.mbOf(id);
    auto add = [&](int op) { available[p.rankOf(op)].push_back(op); };
    if (kind == kF) {
      if (s + 1 < l.stages) add(p.opId(kF, s + 1, m));
      if (s + 1 == l.stages || end[p.opId(kI, s + 1, m)] >= 0) add(p.opId(kI, s, m));
    } else if (kind == kI) {
      add(p.opId(kW, s, m));
      if (s > 0 && end[p.opId(kF, s - 1, m)] >= 0) add(p.opId(kI, s - 1, m));
    }
  }
  // Runs `id` from `start` to `finish`; `entry` is what the rank's order records.
  void commit(int id, double start) { commit(id, start + p.duration(id), id); }
  void commit(int id, double finish, int entry) {
    const StagePlacement &l = p.layout;
    int kind = p.kindOf(id), s = p.stageOf(id), m = p.mbOf(id), r = l.rankOf(s, m);
    end[id] = free[r] = finish;
    orders[r].push_back(entry);
    auto &avail = available[r];
    avail.erase(std::find(avail.begin(), avail.end(), id));
    if (kind == kF) {
      for (int q = wholePath ? 0 : r; q < (wholePath ? l.ranks : r + 1); ++q)
        if (!admitted[q][m]) {
          admitted[q][m] = 1;
          reserved[q] += l.stagesOn(q, m);
        }
      --reserved[r];
      ++live[r];
      if (s + 1 < l.stages && l.rankOf(s + 1, m) != r)
        channel[channelOf(r, l.rankOf(s + 1, m), 0)].push_back(id);
    } else if (kind == kI) {
      if (s > 0 && l.rankOf(s - 1, m) != r)
        channel[channelOf(r, l.rankOf(s - 1, m), 1)].push_back(id);
    } else {
      --live[r];
    }
    int producer;
    int c = inputChannel(id, producer);
    if (c >= 0)
      ++consumed[c];
    release(id);
  }
};

// With --overlap: runs `op` (an F or an I that could start at `start`) as a
// pair with an op of the other kind on its rank when that finishes both sooner
// than running them one after the other; returns the ops committed (0: none).
// `only`: the one partner allowed (a static sequence's next), or none for any.
int pairUp(State &state, int op, double start, std::optional<int> only = std::nullopt) {
  const SynthProblem &p = state.p;
  int r = p.rankOf(op), want = p.kindOf(op) == kF ? kI : kF;
  int best = -1;
  double bestFinish = 0;
  bool bestWhole = false;
  for (int other : state.available[r]) {
    if (p.kindOf(other) != want || p.mbOf(other) == p.mbOf(op) || !state.allowed(other) ||
        (only && other != *only))
      continue;
    int f = want == kF ? other : op, i = want == kF ? op : other;
    bool whole = p.pairTakesW(f, i);
    double alone = p.duration(f) + p.duration(i) + (whole ? p.duration(p.weightOf(i)) : 0);
    double finish = std::max(start, state.earliestStart(other)) + p.pairDuration(f, i, whole);
    if (finish < start + alone - 1e-9 && (best < 0 || finish < bestFinish - 1e-12))
      best = other, bestFinish = finish, bestWhole = whole;
  }
  if (best < 0)
    return 0;
  int f = want == kF ? best : op, i = want == kF ? op : best;
  state.commit(f, bestFinish, f | SynthProblem::kPaired);
  state.commit(i, bestFinish, i);
  if (bestWhole)
    state.commit(p.weightOf(i), bestFinish, p.weightOf(i));
  return bestWhole ? 3 : 2;
}

} // namespace

std::optional<RankOrders> listSchedule(const SynthProblem &p, const ListVariant &variant) {
  State state(p, variant.slack);
  state.wholePath = variant.wholePath;
  const StagePlacement &l = p.layout;
  int rankOfKind[3];
  for (int i = 0; i < 3; ++i)
    rankOfKind[variant.order[i]] = i;
  std::mt19937_64 rng(variant.noise);
  std::vector<uint32_t> jitter(p.numOps(), 0);
  if (variant.noise)
    for (uint32_t &j : jitter)
      j = uint32_t(rng() % 4); // small: reorders near-equal choices only
  // A smaller key is preferred.
  auto key = [&](int id) {
    int kind = p.kindOf(id), s = p.stageOf(id), m = p.mbOf(id);
    int64_t within = kind == kF && variant.depthFirst ? int64_t(l.stages - s) * p.microbatches + m
                     : kind == kF                     ? int64_t(m) * l.stages + s
                                                      : int64_t(m) * l.stages + (l.stages - s);
    return (int64_t(rankOfKind[kind]) << 40) + (int64_t(jitter[id]) << 32) + within;
  };
  std::vector<double> meanOp(l.ranks, 0);
  for (int r = 0; r < l.ranks; ++r) {
    for (int s : l.rankStages[r])
      meanOp[r] += p.costs.F[s] + p.costs.I[s] + p.costs.W[s];
    meanOp[r] /= 3.0 * std::max<size_t>(1, l.rankStages[r].size());
  }
  int total = p.numOps();
  for (int committed = 0, steps = 0; committed < total; ++steps) {
    if ((steps & 63) == 0 && p.pastDeadline())
      return std::nullopt; // --time ran out in the middle of a construction
    int bestOp = -1;
    double bestStart = 0;
    for (int r = 0; r < l.ranks; ++r) {
      double first = kNever;
      for (int id : state.available[r])
        if (state.allowed(id))
          first = std::min(first, state.earliestStart(id));
      if (first == kNever)
        continue;
      int choice = -1;
      double start = 0;
      for (int id : state.available[r]) {
        if (!state.allowed(id))
          continue;
        double at = state.earliestStart(id);
        if (at > first + variant.window * meanOp[r] + 1e-9)
          continue;
        if (choice < 0 || key(id) < key(choice))
          choice = id, start = at;
      }
      if (bestOp < 0 || start < bestStart - 1e-12)
        bestOp = choice, bestStart = start;
    }
    if (bestOp < 0)
      return std::nullopt; // stuck: nothing can run within the budget
    if (p.overlap && p.kindOf(bestOp) != kW) {
      int partners = pairUp(state, bestOp, bestStart);
      if (partners) {
        committed += partners;
        continue;
      }
    }
    state.commit(bestOp, bestStart);
    ++committed;
    if (!p.split && p.kindOf(bestOp) == kI) { // a B: its W at once
      int w = p.weightOf(bestOp);
      state.commit(w, state.earliestStart(w));
      ++committed;
    }
  }
  return std::move(state.orders);
}

} // namespace pipec::synth

namespace pipec::synth {

namespace {

// The lanes of rank r, a stage of a flow each, in pipeline order (its first
// stage first): the micro-batches of each as op ids of `kind`, ascending.
std::vector<std::vector<int>> lanes(const SynthProblem &p, int r, int kind) {
  const StagePlacement &l = p.layout;
  std::vector<std::pair<int, int>> keys; // (stage, first micro-batch)
  std::vector<std::vector<int>> out;
  for (int s = 0; s < l.stages; ++s)
    for (int m = 0; m < p.microbatches; ++m) {
      if (l.rankOf(s, m) != r)
        continue;
      int flow = l.flowOf(m);
      size_t at = 0;
      while (at < keys.size() && !(keys[at].first == s && l.flowOf(keys[at].second) == flow))
        ++at;
      if (at == keys.size()) {
        keys.emplace_back(s, m);
        out.emplace_back();
      }
      out[at].push_back(p.opId(kind, s, m));
    }
  return out; // stages ascending: the pipeline order on this rank
}

// In a forward sequence: a turn in which the rank runs only the backward (ZB-V's
// steady state once a stage has no forwards left).
constexpr int kSkippedTurn = -1;

// One rank's forwards (or backwards, given the lanes reversed) in the order a
// sequence rule takes them.
std::vector<int> sequenceOf(const std::vector<std::vector<int>> &lanes,
                            PhasedVariant::Sequence rule, int lead, int group,
                            std::array<int, 3> phases = {}, bool ownFirst = false) {
  if (rule == PhasedVariant::Sequence::Phases && lanes.size() != 2)
    rule = PhasedVariant::Sequence::Lead;
  std::vector<int> out;
  std::vector<size_t> next(lanes.size(), 0);
  auto take = [&](size_t lane, int count) {
    for (int i = 0; i < count && next[lane] < lanes[lane].size(); ++i)
      out.push_back(lanes[lane][next[lane]++]);
  };
  size_t total = 0;
  for (const auto &lane : lanes)
    total += lane.size();
  if (rule == PhasedVariant::Sequence::Lead && !lanes.empty())
    take(0, lead);
  if (rule == PhasedVariant::Sequence::Phases && lanes.size() == 2) {
    take(0, phases[0]);
    for (int i = 0; i < phases[1]; ++i) {
      take(ownFirst ? 0 : 1, 1);
      take(ownFirst ? 1 : 0, 1);
    }
    take(1, phases[2]);
    // In turn; a stage with no forwards left still has its turn (kSkippedTurn),
    // in which the rank runs only the backward, as ZB-V's steady state does.
    size_t skipped = 0;
    while (out.size() - skipped < total)
      for (size_t lane : {0, 1}) {
        size_t before = out.size();
        take(lane, 1);
        if (out.size() == before && out.size() - skipped < total)
          out.push_back(kSkippedTurn), ++skipped;
      }
  }
  while (out.size() < total) {
    if (rule == PhasedVariant::Sequence::Lead)
      for (size_t j = lanes.size(); j-- > 0;)
        take(j, 1);
    else
      for (size_t j = 0; j < lanes.size(); ++j)
        take(j, group);
  }
  return out;
}

} // namespace

namespace {

// The library's shape built in simulated time, one step at a time: each step
// every rank proposes the op it wants next (wantedKind, then the best op of that
// kind, or a W that fits the wait), the earliest proposal runs (as a pair when
// --overlap pairs it), and the rank's counters and sequence cursors move on.
class PhasedBuilder {
public:
  PhasedBuilder(const SynthProblem &p, const PhasedVariant &variant)
      : p_(p), v_(variant), state_(p, -1),
        ordered_(variant.sequence != PhasedVariant::Sequence::Arrival) {
    state_.reserve = false; // the warm-ups decide; a stuck variant is dropped
    const StagePlacement &l = p.layout;
    const int ranks = l.ranks;
    total_.assign(ranks, 0);
    forwards_.assign(ranks, 0);
    inputs_.assign(ranks, 0);
    pendingW_.assign(ranks, 0);
    lastWasForward_.assign(ranks, 0);
    for (int s = 0; s < l.stages; ++s)
      for (int m = 0; m < p.microbatches; ++m)
        ++total_[l.rankOf(s, m)];
    sequences_.resize(ranks);
    if (ordered_)
      for (int r = 0; r < ranks; ++r)
        buildSequences(r);
  }

  std::optional<RankOrders> run() {
    for (int committed = 0, total = p_.numOps(), steps = 0; committed < total; ++steps) {
      if ((steps & 63) == 0 && p_.pastDeadline())
        return std::nullopt; // --time ran out in the middle of a construction
      std::optional<Choice> next = preferredStep();
      if (!next)
        next = anyRunnableStep(); // the wanted kinds cannot run (memory or order)
      if (!next)
        return std::nullopt;
      committed += commit(*next);
    }
    return std::move(state_.orders);
  }

private:
  struct Choice {
    int op;
    double start;
  };
  // Rank r's static sequences of forwards (ops[kF]) and backwards (ops[kI]),
  // each with a cursor at its first op not yet run.
  struct RankSequences {
    std::vector<int> ops[2];
    size_t cursor[2] = {0, 0};
  };
  // Whom an op may pair with: anyone, one op (a static sequence's next), or nobody.
  struct PartnerRule {
    bool allowed = true;
    std::optional<int> only;
  };

  void buildSequences(int r) {
    for (int kind : {kF, kI}) {
      auto laneOps = lanes(p_, r, kind);
      if (kind == kI)
        std::reverse(laneOps.begin(), laneOps.end());
      int lead = kind == kF ? v_.leadF[r] : v_.leadI[r];
      auto rule = v_.sequence;
      if (rule == PhasedVariant::Sequence::Phases && kind == kI)
        rule = PhasedVariant::Sequence::Lead;
      sequences_[r].ops[kind] =
          sequenceOf(laneOps, rule, lead, p_.layout.ranks,
                     kind == kF ? v_.phaseF[r] : std::array<int, 3>{}, v_.ownFirst);
    }
  }

  // A smaller key is preferred among ops that could start at the same time.
  int64_t key(int id) const {
    const StagePlacement &l = p_.layout;
    int kind = p_.kindOf(id), s = p_.stageOf(id), m = p_.mbOf(id);
    if (kind == kF)
      return v_.depthFirst ? int64_t(l.stages - s) * p_.microbatches + m
                           : int64_t(m) * l.stages + (l.stages - s);
    return int64_t(m) * l.stages + (kind == kI ? l.stages - s : s);
  }

  // Moves `at` past the ops of `ops` already run (not past a skipped turn).
  void skipDone(const std::vector<int> &ops, size_t &at) const {
    while (at < ops.size() && ops[at] != kSkippedTurn && state_.end[ops[at]] >= 0)
      ++at;
  }

  // Whether rank r's forward sequence stands at a skipped turn, which it then passes.
  bool takeSkippedTurn(int r) {
    RankSequences &seq = sequences_[r];
    skipDone(seq.ops[kF], seq.cursor[kF]);
    if (seq.cursor[kF] < seq.ops[kF].size() && seq.ops[kF][seq.cursor[kF]] == kSkippedTurn) {
      ++seq.cursor[kF];
      return true;
    }
    return false;
  }

  // The kind rank r takes next, or none when it has nothing left: warm-up
  // forwards, then forwards and backwards in turn, a W whenever more than
  // `defer` are held back; the rest at the end.
  std::optional<int> wantedKind(int r) {
    bool draining = v_.drainInputs && forwards_[r] == total_[r] && inputs_[r] < total_[r];
    if ((pendingW_[r] > v_.defer[r] && !draining) ||
        (forwards_[r] == total_[r] && inputs_[r] == total_[r]))
      return pendingW_[r] ? std::optional<int>(kW) : std::nullopt;
    if (forwards_[r] < std::min(v_.warmup[r], total_[r]))
      return kF;
    if (forwards_[r] == total_[r])
      return kI;
    if (inputs_[r] == total_[r])
      return kF;
    if (!lastWasForward_[r] && ordered_ && takeSkippedTurn(r))
      lastWasForward_[r] = 1; // a skipped turn counts as the forward
    return lastWasForward_[r] ? kI : kF;
  }

  // The next op of rank r's sequence of `kind`, when it can run now.
  std::optional<int> sequenceNext(int r, int kind, double &start) {
    RankSequences &seq = sequences_[r];
    skipDone(seq.ops[kind], seq.cursor[kind]);
    size_t at = seq.cursor[kind];
    if (at == seq.ops[kind].size() || seq.ops[kind][at] == kSkippedTurn)
      return std::nullopt;
    int id = seq.ops[kind][at];
    const auto &avail = state_.available[r];
    if (std::find(avail.begin(), avail.end(), id) == avail.end() || !state_.allowed(id))
      return std::nullopt;
    start = state_.earliestStart(id);
    return id;
  }

  // The op of `kind` rank r should run: its sequence's next, or (for W, without a
  // sequence, or `anyOrder`) the one that can start first.
  std::optional<int> best(int r, int kind, double &start, bool anyOrder = false) {
    if (ordered_ && kind != kW && !anyOrder)
      return sequenceNext(r, kind, start);
    std::optional<int> choice;
    for (int id : state_.available[r]) {
      if (p_.kindOf(id) != kind || !state_.allowed(id))
        continue;
      double at = state_.earliestStart(id);
      if (!choice || at < start - 1e-12 || (at < start + 1e-12 && key(id) < key(*choice)))
        choice = id, start = at;
    }
    return choice;
  }

  // The earliest op any rank wants, a W taking the place of the wanted op when
  // it fits in the wait for it.
  std::optional<Choice> preferredStep() {
    std::optional<Choice> bestStep;
    for (int r = 0; r < p_.layout.ranks; ++r) {
      std::optional<int> kind = wantedKind(r);
      if (!kind)
        continue;
      double start = 0, wStart = 0;
      std::optional<int> choice = best(r, *kind, start);
      std::optional<int> w = *kind != kW && pendingW_[r] ? best(r, kW, wStart) : std::nullopt;
      if (w && (!choice || wStart + p_.duration(*w) <= start + 1e-12))
        choice = w, start = wStart;
      if (choice && (!bestStep || start < bestStep->start - 1e-12))
        bestStep = Choice{*choice, start};
    }
    return bestStep;
  }

  // The earliest op that can run at all, whatever the ranks want.
  std::optional<Choice> anyRunnableStep() {
    std::optional<Choice> bestStep;
    for (int r = 0; r < p_.layout.ranks; ++r)
      for (int kind : {kI, kW, kF}) {
        double start = 0;
        std::optional<int> choice = best(r, kind, start, true);
        if (choice && (!bestStep || start < bestStep->start - 1e-12))
          bestStep = Choice{*choice, start};
      }
    return bestStep;
  }

  // In a static sequence the partner is the other kind's next op (none when
  // that sequence is done); else any op of the other kind.
  PartnerRule partnerRule(int r, int kind) const {
    if (!ordered_)
      return {};
    const std::vector<int> &ops = sequences_[r].ops[kind == kF ? kI : kF];
    size_t at = sequences_[r].cursor[kind == kF ? kI : kF];
    while (at < ops.size() && (ops[at] == kSkippedTurn || state_.end[ops[at]] >= 0))
      ++at;
    if (at == ops.size())
      return {false, std::nullopt};
    return {true, ops[at]};
  }

  void record(int id) {
    int r = p_.rankOf(id), kind = p_.kindOf(id);
    if (kind == kF) // the turns start with a forward after the warm-up
      ++forwards_[r], lastWasForward_[r] = forwards_[r] > v_.warmup[r];
    else if (kind == kI)
      ++inputs_[r], ++pendingW_[r], lastWasForward_[r] = 0;
    else
      --pendingW_[r];
  }

  // Runs the step (as a pair when --overlap pairs it); returns the ops it ran.
  int commit(const Choice &step) {
    int r = p_.rankOf(step.op);
    if (p_.overlap && p_.kindOf(step.op) != kW) {
      size_t before = state_.orders[r].size();
      PartnerRule partner = partnerRule(r, p_.kindOf(step.op));
      int partners = partner.allowed ? pairUp(state_, step.op, step.start, partner.only) : 0;
      if (partners) {
        for (size_t i = before; i < state_.orders[r].size(); ++i)
          record(SynthProblem::idOf(state_.orders[r][i]));
        return partners;
      }
    }
    state_.commit(step.op, step.start);
    record(step.op);
    if (!p_.split && p_.kindOf(step.op) == kI) { // a B: its W at once
      int w = p_.weightOf(step.op);
      state_.commit(w, state_.earliestStart(w));
      record(w);
      return 2;
    }
    return 1;
  }

  const SynthProblem &p_;
  const PhasedVariant &v_;
  State state_;
  bool ordered_;
  std::vector<int> total_, forwards_, inputs_, pendingW_;
  std::vector<char> lastWasForward_;
  std::vector<RankSequences> sequences_;
};

} // namespace

std::optional<RankOrders> phasedSchedule(const SynthProblem &p, const PhasedVariant &variant) {
  return PhasedBuilder(p, variant).run();
}

} // namespace pipec::synth
