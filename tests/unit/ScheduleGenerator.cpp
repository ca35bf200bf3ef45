#include "ScheduleGenerator.h"

#include <algorithm>

namespace pipec::test {

namespace {

const char *placementName(GenPlacement p) {
  switch (p) {
  case GenPlacement::Linear: return "linear";
  case GenPlacement::V: return "V";
  case GenPlacement::Interleaved: return "interleaved";
  case GenPlacement::TwoFlows: return "two-flows";
  }
  return "?";
}

bool isBackward(char kind) { return kind == 'B' || kind == 'I'; }

std::string opText(const GenOp &op) {
  return std::string(1, op.kind) + "(" + std::to_string(op.chunk) + ", mb = " +
         std::to_string(op.mb) + ")";
}

} // namespace

int GenSchedule::stageOf(int rank, int chunk, int mb) const {
  for (int s = 0; s < S; ++s)
    if (slot(s, mb) == std::make_pair(rank, chunk))
      return s;
  return -1;
}

std::pair<int, int> GenSchedule::slot(int stage, int mb) const {
  switch (placement) {
  case GenPlacement::Linear: return {stage, 0};
  case GenPlacement::V: return {stage < P ? stage : 2 * P - 1 - stage, stage < P ? 0 : 1};
  case GenPlacement::Interleaved: return {stage % P, stage / P};
  case GenPlacement::TwoFlows:
    return mb < flowSplit ? std::make_pair(stage, 0) : std::make_pair(P - 1 - stage, 1);
  }
  return {0, 0};
}

std::string GenSchedule::source() const {
  std::string out = "// " + history + "\nschedule gen() {\n";
  out += "  ranks " + std::to_string(P) + "; stages " + std::to_string(S) + "; microbatches " +
         std::to_string(M) + ";\n";
  std::string p = std::to_string(P);
  switch (placement) {
  case GenPlacement::Linear: out += "  place stage s -> rank s chunk 0;\n"; break;
  case GenPlacement::V:
    out += "  place stage s -> rank s < " + p + " ? s : 2 * " + p + " - 1 - s chunk s < " + p +
           " ? 0 : 1;\n";
    break;
  case GenPlacement::Interleaved:
    out += "  place stage s -> rank s % " + p + " chunk s / " + p + ";\n";
    break;
  case GenPlacement::TwoFlows:
    out += "  copies 2;\n";
    out += "  flow down: microbatches 0.." + std::to_string(flowSplit) +
           " { place stage s -> rank s chunk 0; }\n";
    out += "  flow up: microbatches " + std::to_string(flowSplit) + ".." + std::to_string(M) +
           " { place stage s -> rank " + p + " - 1 - s chunk 1; }\n";
    break;
  }
  for (size_t r = 0; r < ranks.size(); ++r) {
    out += "  rank " + std::to_string(r) + " {";
    for (const GenStep &step : ranks[r]) {
      out += " ";
      if (step.ops.size() == 2) {
        const GenOp &a = step.ops[step.writtenBackwardFirst ? 1 : 0];
        const GenOp &b = step.ops[step.writtenBackwardFirst ? 0 : 1];
        out += opText(a) + " & " + opText(b) + ";";
      } else {
        for (const GenOp &op : step.ops)
          out += opText(op) + ";";
      }
    }
    out += " }\n";
  }
  out += "}\n";
  return out;
}

GenSchedule ScheduleGenerator::valid() {
  GenSchedule g;
  g.P = 1 + pick(5);
  g.M = 1 + pick(6);
  switch (pick(4)) {
  case 0: g.placement = GenPlacement::Linear; break;
  case 1: g.placement = GenPlacement::V; break;
  case 2: g.placement = GenPlacement::Interleaved; break;
  default: // copies 2 needs two ranks, two flows two micro-batches
    g.placement = g.M >= 2 && g.P >= 2 ? GenPlacement::TwoFlows : GenPlacement::Linear;
    break;
  }
  bool twoStagesPerRank =
      g.placement == GenPlacement::V || g.placement == GenPlacement::Interleaved;
  g.S = twoStagesPerRank ? 2 * g.P : g.P;
  if (g.placement == GenPlacement::TwoFlows)
    g.flowSplit = 1 + pick(g.M - 1);

  static const double splitChoices[] = {0.0, 0.0, 0.35, 1.0};
  static const double pairChoices[] = {0.0, 0.0, 0.3, 0.8};
  double pSplit = splitChoices[pick(4)];
  double pPair = pairChoices[pick(4)];
  int strategy = pick(4); // 0 uniform, 1 backward first, 2 oldest micro-batch first, 3 forward first

  const int S = g.S, M = g.M;
  // Node kinds: 0 = F, 1 = B or I, 2 = W (only when split).
  auto id = [&](int kind, int s, int mb) { return (kind * S + s) * M + mb; };
  std::vector<char> split(static_cast<size_t>(S * M)), done(static_cast<size_t>(3 * S * M), 0);
  int total = 0;
  for (int s = 0; s < S; ++s)
    for (int mb = 0; mb < M; ++mb) {
      split[static_cast<size_t>(s * M + mb)] = chance(pSplit);
      total += split[static_cast<size_t>(s * M + mb)] ? 3 : 2;
    }
  auto ready = [&](int kind, int s, int mb) {
    if (done[static_cast<size_t>(id(kind, s, mb))])
      return false;
    switch (kind) {
    case 0: return s == 0 || done[static_cast<size_t>(id(0, s - 1, mb))] != 0;
    case 1:
      return s == S - 1 ? done[static_cast<size_t>(id(0, s, mb))] != 0
                        : done[static_cast<size_t>(id(1, s + 1, mb))] != 0;
    default:
      return split[static_cast<size_t>(s * M + mb)] && done[static_cast<size_t>(id(1, s, mb))] != 0;
    }
  };

  struct Node {
    int kind, s, mb;
  };
  // With `fifo`, the order is also a sequential run over first-in-first-out
  // channels: an op that receives a message may run only once every message sent
  // earlier on the same channel (sender, receiver, kind) was received. Then every
  // channel's sends and receives come in the same order: no message-order mismatch.
  // That run can get stuck (the head messages' receivers all wait for something
  // else); then it starts over, and after a few tries the order is unconstrained.
  // The message an op receives or sends: (channel, id), or channel -1 for none.
  auto messageIn = [&](const Node &c) -> std::pair<int, int> {
    int other = c.kind == 0 ? c.s - 1 : c.kind == 1 ? c.s + 1 : -1;
    if (other < 0 || other >= S)
      return {-1, 0};
    int from = g.slot(other, c.mb).first, to = g.slot(c.s, c.mb).first;
    return {from == to ? -1 : (from * g.P + to) * 2 + c.kind, (c.kind * S + other) * M + c.mb};
  };
  auto messageOut = [&](const Node &c) -> std::pair<int, int> {
    int other = c.kind == 0 ? c.s + 1 : c.kind == 1 ? c.s - 1 : -1;
    if (other < 0 || other >= S)
      return {-1, 0};
    int from = g.slot(c.s, c.mb).first, to = g.slot(other, c.mb).first;
    return {from == to ? -1 : (from * g.P + to) * 2 + c.kind, (c.kind * S + c.s) * M + c.mb};
  };
  bool fifo = chance(0.8);
  std::vector<std::vector<GenOp>> sequence;
  for (int attempt = 0;; ++attempt) {
    if (attempt == 8)
      fifo = false;
    std::fill(done.begin(), done.end(), 0);
    sequence.assign(static_cast<size_t>(g.P), {});
    std::vector<std::vector<int>> channels(static_cast<size_t>(g.P * g.P * 2)); // queues
    std::vector<size_t> channelHead(channels.size(), 0);
    bool stuck = false;
    for (int n = 0; n < total && !stuck; ++n) {
      std::vector<Node> candidates;
      for (int kind = 0; kind < 3; ++kind)
        for (int s = 0; s < S; ++s)
          for (int mb = 0; mb < M; ++mb)
            if (ready(kind, s, mb)) {
              auto in = messageIn({kind, s, mb});
              if (fifo && in.first >= 0) {
                const std::vector<int> &q = channels[static_cast<size_t>(in.first)];
                size_t head = channelHead[static_cast<size_t>(in.first)];
                if (head >= q.size() || q[head] != in.second)
                  continue;
              }
              candidates.push_back({kind, s, mb});
            }
      if (candidates.empty()) {
        stuck = true;
        break;
      }
      std::vector<Node> preferred;
      if (strategy == 1 || strategy == 3) {
        for (const Node &c : candidates)
          if ((strategy == 1) == (c.kind != 0))
            preferred.push_back(c);
      } else if (strategy == 2) {
        int oldest = M;
        for (const Node &c : candidates)
          oldest = std::min(oldest, c.mb);
        for (const Node &c : candidates)
          if (c.mb == oldest)
            preferred.push_back(c);
      }
      const std::vector<Node> &from = !preferred.empty() && chance(0.75) ? preferred : candidates;
      Node c = from[static_cast<size_t>(pick(static_cast<int>(from.size())))];
      done[static_cast<size_t>(id(c.kind, c.s, c.mb))] = 1;
      auto in = messageIn(c), out = messageOut(c);
      if (in.first >= 0)
        ++channelHead[static_cast<size_t>(in.first)];
      if (out.first >= 0)
        channels[static_cast<size_t>(out.first)].push_back(out.second);
      auto [rank, chunk] = g.slot(c.s, c.mb);
      char kind = c.kind == 0 ? 'F' : c.kind == 2 ? 'W' : split[static_cast<size_t>(c.s * M + c.mb)] ? 'I' : 'B';
      sequence[static_cast<size_t>(rank)].push_back({kind, chunk, c.mb});
    }
    if (!stuck)
      break;
  }

  g.ranks.resize(static_cast<size_t>(g.P));
  int pairs = 0;
  for (size_t r = 0; r < sequence.size(); ++r) {
    const std::vector<GenOp> &seq = sequence[r];
    for (size_t i = 0; i < seq.size(); ++i) {
      GenStep step;
      if (i + 1 < seq.size()) {
        const GenOp &a = seq[i], &b = seq[i + 1];
        bool fb = (a.kind == 'F' && isBackward(b.kind)) || (isBackward(a.kind) && b.kind == 'F');
        if (fb && a.mb != b.mb && chance(pPair)) {
          step.writtenBackwardFirst = a.kind != 'F';
          step.ops = a.kind == 'F' ? std::vector<GenOp>{a, b} : std::vector<GenOp>{b, a};
          g.ranks[r].push_back(step);
          ++pairs;
          ++i;
          continue;
        }
      }
      step.ops = {seq[i]};
      g.ranks[r].push_back(step);
    }
  }
  g.history = std::string("valid ") + placementName(g.placement) + " P=" + std::to_string(g.P) +
              " S=" + std::to_string(g.S) + " M=" + std::to_string(g.M) +
              " strategy=" + std::to_string(strategy) + (fifo ? " fifo" : "") + " pairs=" + std::to_string(pairs) + ";";
  return g;
}

void ScheduleGenerator::mutate(GenSchedule &g) {
  std::vector<size_t> candidates;
  for (size_t r = 0; r < g.ranks.size(); ++r)
    if (g.ranks[r].size() >= 2)
      candidates.push_back(r);
  if (candidates.empty())
    return;
  size_t r = candidates[static_cast<size_t>(pick(static_cast<int>(candidates.size())))];
  std::vector<GenStep> &steps = g.ranks[r];
  int n = static_cast<int>(steps.size());
  std::string where = " rank " + std::to_string(r);

  // The channels a step uses (peer * 4 + is-send * 2 + is-gradient). Swapping two
  // adjacent steps that share none keeps every channel's message order, so it can
  // make a deadlock but not a mismatch.
  auto channelsOf = [&](const GenStep &step) {
    std::vector<int> used;
    for (const GenOp &op : step.ops) {
      int s = g.stageOf(static_cast<int>(r), op.chunk, op.mb);
      if (s < 0 || op.kind == 'W')
        continue;
      int in = op.kind == 'F' ? s - 1 : s + 1, out = op.kind == 'F' ? s + 1 : s - 1;
      int gradient = op.kind == 'F' ? 0 : 1;
      if (in >= 0 && in < g.S && g.slot(in, op.mb).first != static_cast<int>(r))
        used.push_back(g.slot(in, op.mb).first * 4 + gradient);
      if (out >= 0 && out < g.S && g.slot(out, op.mb).first != static_cast<int>(r))
        used.push_back(g.slot(out, op.mb).first * 4 + 2 + gradient);
    }
    return used;
  };
  auto disjoint = [&](const GenStep &a, const GenStep &b) {
    std::vector<int> ca = channelsOf(a), cb = channelsOf(b);
    if (ca.empty() || cb.empty())
      return false;
    for (int x : ca)
      if (std::find(cb.begin(), cb.end(), x) != cb.end())
        return false;
    return true;
  };
  int what = pick(100);
  if (what < 40) { // swap two adjacent steps
    // Prefer swaps that keep every channel's order and every dependency (the data
    // dependencies all lie within one micro-batch): they make deadlocks.
    auto independent = [](const GenStep &a, const GenStep &b) {
      for (const GenOp &x : a.ops)
        for (const GenOp &y : b.ops)
          if (x.mb == y.mb)
            return false;
      return true;
    };
    std::vector<int> orderKeeping;
    for (int i = 0; i + 1 < n; ++i) {
      const GenStep &a = steps[static_cast<size_t>(i)], &b = steps[static_cast<size_t>(i + 1)];
      if (disjoint(a, b) && independent(a, b))
        orderKeeping.push_back(i);
    }
    int i = !orderKeeping.empty() && chance(0.75)
                ? orderKeeping[static_cast<size_t>(pick(static_cast<int>(orderKeeping.size())))]
                : pick(n - 1);
    std::swap(steps[static_cast<size_t>(i)], steps[static_cast<size_t>(i + 1)]);
    g.history += " swap" + where + " steps " + std::to_string(i) + "," + std::to_string(i + 1) + ";";
  } else if (what < 55) { // move a step elsewhere
    int from = pick(n);
    GenStep step = steps[static_cast<size_t>(from)];
    steps.erase(steps.begin() + from);
    int to = pick(n); // 0..n-1 in the shortened list
    steps.insert(steps.begin() + to, step);
    g.history += " move" + where + " step " + std::to_string(from) + " to " + std::to_string(to) + ";";
  } else if (what < 60) { // drop an op
    int i = pick(n);
    GenStep &step = steps[static_cast<size_t>(i)];
    int j = pick(static_cast<int>(step.ops.size()));
    step.ops.erase(step.ops.begin() + j);
    if (step.ops.empty())
      steps.erase(steps.begin() + i);
    g.history += " drop" + where + " step " + std::to_string(i) + " op " + std::to_string(j) + ";";
  } else if (what < 70) { // swap two ops' micro-batches
    std::vector<std::pair<size_t, size_t>> ops;
    for (size_t i = 0; i < steps.size(); ++i)
      for (size_t j = 0; j < steps[i].ops.size(); ++j)
        ops.push_back({i, j});
    auto at = [&](std::pair<size_t, size_t> p) -> GenOp & { return steps[p.first].ops[p.second]; };
    auto a = ops[static_cast<size_t>(pick(static_cast<int>(ops.size())))];
    std::vector<std::pair<size_t, size_t>> same;
    for (auto b : ops)
      if (at(b).kind == at(a).kind && at(b).chunk == at(a).chunk && at(b).mb != at(a).mb)
        same.push_back(b);
    auto b = !same.empty() && chance(0.8) ? same[static_cast<size_t>(pick(static_cast<int>(same.size())))]
                                          : ops[static_cast<size_t>(pick(static_cast<int>(ops.size())))];
    std::swap(at(a).mb, at(b).mb);
    g.history += " mbswap" + where + " ops " + std::to_string(a.first) + "." + std::to_string(a.second) +
                 "," + std::to_string(b.first) + "." + std::to_string(b.second) + ";";
  } else { // split a pair, or join two adjacent steps into one
    int i = pick(n);
    GenStep &step = steps[static_cast<size_t>(i)];
    if (step.ops.size() == 2) {
      GenStep first, second;
      bool backwardFirst = chance(0.5);
      first.ops = {step.ops[backwardFirst ? 1 : 0]};
      second.ops = {step.ops[backwardFirst ? 0 : 1]};
      steps[static_cast<size_t>(i)] = second;
      steps.insert(steps.begin() + i, first);
      g.history += " unpair" + where + " step " + std::to_string(i) + ";";
      return;
    }
    // Join two adjacent single steps into a pair, if that makes one forward and one
    // backward; mostly of different micro-batches (else the pair is dependent).
    bool allowSameMicrobatch = chance(0.1);
    for (int k = 0; k < n - 1; ++k) {
      int j = (i + k) % (n - 1);
      GenStep &a = steps[static_cast<size_t>(j)], &b = steps[static_cast<size_t>(j + 1)];
      if (a.ops.size() != 1 || b.ops.size() != 1)
        continue;
      char ka = a.ops[0].kind, kb = b.ops[0].kind;
      bool fb = (ka == 'F' && isBackward(kb)) || (isBackward(ka) && kb == 'F');
      if (!fb || (a.ops[0].mb == b.ops[0].mb && !allowSameMicrobatch))
        continue;
      GenStep pair;
      pair.writtenBackwardFirst = ka != 'F';
      pair.ops = ka == 'F' ? std::vector<GenOp>{a.ops[0], b.ops[0]}
                           : std::vector<GenOp>{b.ops[0], a.ops[0]};
      steps[static_cast<size_t>(j)] = pair;
      steps.erase(steps.begin() + j + 1);
      g.history += " pair" + where + " steps " + std::to_string(j) + "," + std::to_string(j + 1) + ";";
      return;
    }
    mutate(g); // nothing to join: mutate some other way
  }
}

} // namespace pipec::test
