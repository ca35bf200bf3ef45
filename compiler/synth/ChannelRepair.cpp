#include "synth/ChannelRepair.h"

namespace pipec::synth {

namespace {

struct Channels {
  const SynthProblem &p;
  std::vector<std::vector<int>> sent;     // channel -> producers, in the sender's order
  std::vector<std::vector<int>> received; // channel -> consumers, in the receiver's order
  std::vector<int> position;              // op -> index in its rank's order

  explicit Channels(const SynthProblem &problem)
      : p(problem), sent(size_t(problem.layout.ranks) * problem.layout.ranks * 2),
        received(sent.size()), position(problem.numOps(), -1) {}

  int channel(int from, int to, int gradient) const {
    return (from * p.layout.ranks + to) * 2 + gradient;
  }
  void collect(const RankOrders &orders) {
    const StagePlacement &l = p.layout;
    for (auto &c : sent) c.clear();
    for (auto &c : received) c.clear();
    for (int r = 0; r < l.ranks; ++r)
      for (size_t i = 0; i < orders[r].size(); ++i) {
        int id = SynthProblem::idOf(orders[r][i]);
        position[id] = int(i);
        int kind = p.kindOf(id), s = p.stageOf(id), m = p.mbOf(id);
        int up = s > 0 ? l.rankOf(s - 1, m) : r, down = s + 1 < l.stages ? l.rankOf(s + 1, m) : r;
        if (kind == kF) {
          if (down != r) sent[channel(r, down, 0)].push_back(id);
          if (up != r) received[channel(up, r, 0)].push_back(id);
        } else if (kind == kI) {
          if (up != r) sent[channel(r, up, 1)].push_back(id);
          if (down != r) received[channel(down, r, 1)].push_back(id);
        }
      }
  }
  // The op that receives what `producer` sends.
  int consumerOf(int producer) const {
    int s = p.stageOf(producer), m = p.mbOf(producer);
    return p.kindOf(producer) == kF ? p.opId(kF, s + 1, m) : p.opId(kI, s - 1, m);
  }
};

} // namespace

bool repairChannels(const SynthProblem &p, RankOrders &orders, int passes) {
  Channels channels(p);
  const int ranks = p.layout.ranks;
  for (int pass = 0; pass < passes; ++pass) {
    if (p.pastDeadline())
      return false; // --time ran out: the move is dropped as unrepaired
    channels.collect(orders);
    bool changed = false;
    for (size_t c = 0; c < channels.sent.size(); ++c) {
      const std::vector<int> &sent = channels.sent[c], &got = channels.received[c];
      bool inOrder = sent.size() == got.size();
      for (size_t k = 0; inOrder && k < sent.size(); ++k)
        inOrder = channels.consumerOf(sent[k]) == got[k];
      if (inOrder)
        continue;
      if (sent.size() != got.size())
        return false;
      std::vector<int> &order = orders[(c / 2) % ranks];
      for (size_t k = 0; k < got.size(); ++k) {
        int want = channels.consumerOf(sent[k]);
        int at = channels.position[got[k]];
        order[at] = want | (order[at] & SynthProblem::kPaired);
        if (p.kindOf(want) == kI) // its W takes the place of the W it replaces
          order[channels.position[p.weightOf(got[k])]] = p.weightOf(want);
      }
      changed = true;
    }
    if (!changed)
      return true;
  }
  return false;
}

} // namespace pipec::synth
