// Communication: proves that the posting order of comm/CommPlan.h cannot hang.
// Receives are posted in the sender's order on every channel, so the i-th send
// always matches the i-th receive: no order of ops can make NCCL hand over the
// wrong tensor, and what is left to prove is progress. Each rank runs its steps
// in order; a message moves once produced and at the head of its channel (every
// receive up to the one a step needs is posted before that step, so the head is
// never held back by a receive not yet posted; an early message is held).
// Simulated event by event in linear time; ranks left unfinished are
// deadlocked, and the error shows the cycle of ranks waiting for each other,
// with the op each one is stuck before.
#include "check/CheckPasses.h"
#include "check/OpText.h"

#include <algorithm>

namespace pipec {

namespace {

std::string describeMessage(const ScheduleIR &ir, const CommPlan &plan, const Message &m) {
  const Op &producer = plan.producerOp(ir, m);
  const char *what = m.kind == MessageKind::Activation ? "the activation"
                     : m.kind == MessageKind::Gradient ? "the gradient"
                     : m.kind == MessageKind::Evicted  ? "the evicted activation"
                                                       : "the returned activation";
  return std::string(what) + " of stage " + std::to_string(producer.stage) + ", micro-batch " +
         std::to_string(producer.microbatch);
}

// Runs every rank's compute stream and every channel until nothing can move.
// A channel is one queue of messages in send order (= receive order): its head
// moves as soon as its producing step is done.
class ProgressSimulation {
public:
  static constexpr size_t kShownCycleRanks = 8;

  ProgressSimulation(const ScheduleIR &ir, const CommPlan &plan) : ir_(ir), plan_(plan) {}

  // Returns false (after reporting) when some rank can never finish.
  bool run(DiagnosticEngine &diags) {
    buildChannels();
    size_t ranks = plan_.ranks.size();
    step_.assign(ranks, 0);
    stepBegin_.assign(ranks + 1, 0);
    for (size_t r = 0; r < ranks; ++r)
      stepBegin_[r + 1] = stepBegin_[r] + plan_.ranks[r].stepOp.size();
    missingInputs_.assign(stepBegin_.back(), 0);
    for (const Message &m : plan_.messages)
      ++missingInputs(plan_.to(m), m.consumerStep);
    for (size_t r = 0; r < ranks; ++r)
      advance(r);
    while (!ready_.empty()) {
      size_t r = ready_.back();
      ready_.pop_back();
      advance(r);
    }
    for (size_t r = 0; r < ranks; ++r)
      if (step_[r] < plan_.ranks[r].stepOp.size()) {
        reportCycle(r, diags);
        return false;
      }
    return true;
  }

private:
  // A channel's messages are order_[begin, end), in send order (= receive order).
  struct Channel {
    uint32_t begin = 0, end = 0, head = 0; // head: absolute index into order_
  };

  uint8_t &missingInputs(size_t rank, size_t step) {
    return missingInputs_[stepBegin_[rank] + step];
  }

  // Flat channel queues by counting sort: no per-channel or per-rank vectors.
  void buildChannels() {
    channels_.resize(plan_.numChannels);
    for (const Message &m : plan_.messages)
      ++channels_[m.channel].end;
    uint32_t offset = 0;
    for (Channel &channel : channels_) {
      channel.begin = channel.head = offset;
      offset += channel.end;
      channel.end = channel.begin;
    }
    order_.resize(plan_.messages.size());
    for (const RankComm &rank : plan_.ranks)
      for (uint32_t id : rank.sends) {
        Channel &channel = channels_[plan_.messages[id].channel];
        order_[channel.end++] = id;
      }
    // Each rank's outgoing channels, grouped by sender (counting sort again).
    outgoingBegin_.assign(plan_.ranks.size() + 1, 0);
    for (const Channel &channel : channels_)
      if (channel.end > channel.begin)
        ++outgoingBegin_[plan_.from(plan_.messages[order_[channel.begin]]) + 1];
    for (size_t r = 0; r < plan_.ranks.size(); ++r)
      outgoingBegin_[r + 1] += outgoingBegin_[r];
    outgoing_.resize(outgoingBegin_.back());
    std::vector<uint32_t> cursor(outgoingBegin_.begin(), outgoingBegin_.end() - 1);
    for (uint32_t c = 0; c < channels_.size(); ++c)
      if (channels_[c].end > channels_[c].begin)
        outgoing_[cursor[plan_.from(plan_.messages[order_[channels_[c].begin]])]++] = c;
  }

  bool produced(const Message &m) const { return step_[plan_.from(m)] > m.producerStep; }

  // Runs rank r's steps as far as their inputs allow, then delivers what its
  // finished steps produced.
  void advance(size_t r) {
    const RankComm &comm = plan_.ranks[r];
    while (step_[r] < comm.stepOp.size() && missingInputs(r, step_[r]) == 0)
      ++step_[r];
    for (uint32_t k = outgoingBegin_[r]; k < outgoingBegin_[r + 1]; ++k) {
      Channel &channel = channels_[outgoing_[k]];
      while (channel.head < channel.end && produced(plan_.messages[order_[channel.head]])) {
        const Message &m = plan_.messages[order_[channel.head++]];
        if (--missingInputs(plan_.to(m), m.consumerStep) == 0)
          ready_.push_back(plan_.to(m));
      }
    }
  }

  // The message a stuck rank waits for, and the one at the head of its channel
  // (an earlier message of the same channel, or the same one).
  std::pair<const Message *, const Message *> blockedOn(size_t r) const {
    // Receives are in posting order, not consumption order: scan for the stuck
    // step's first input that has not arrived. Each rank is scanned a bounded
    // number of times per report, so the report stays linear.
    for (uint32_t id : plan_.ranks[r].receives) {
      const Message &m = plan_.messages[id];
      if (m.consumerStep != step_[r])
        continue;
      const Channel &channel = channels_[m.channel];
      // Ids grow in send order (CommPlan), so not yet delivered = not before the head.
      if (channel.head < channel.end && id >= order_[channel.head])
        return {&m, &plan_.messages[order_[channel.head]]};
    }
    return {nullptr, nullptr}; // unreachable for a stuck rank
  }

  void reportCycle(size_t start, DiagnosticEngine &diags) {
    // Each stuck rank waits for the rank whose step would unblock it; follow
    // those edges until a rank repeats.
    // Marks, not a search of the path, so a cycle through every rank stays linear.
    std::vector<size_t> path;
    std::vector<bool> onPath(plan_.ranks.size(), false);
    size_t r = start;
    while (!onPath[r]) {
      onPath[r] = true;
      path.push_back(r);
      r = static_cast<size_t>(plan_.from(*blockedOn(r).second));
    }
    std::vector<size_t> cycle(std::find(path.begin(), path.end(), r), path.end());
    // A cycle through thousands of ranks is shown by its first few: the report
    // stays readable and its size does not grow with the rank count.
    size_t shown = std::min(cycle.size(), kShownCycleRanks);
    std::string chain;
    for (size_t k = 0; k < shown; ++k)
      chain += std::to_string(cycle[k]) + " -> ";
    if (shown < cycle.size())
      chain += "... -> ";
    chain += std::to_string(cycle.front());

    auto stuckOp = [&](size_t rank) -> const Op & {
      return ir_.ranks[rank].ops[plan_.ranks[rank].stepOp[step_[rank]]];
    };
    Diagnostic *d = diags.reportOnce(DiagKind::Deadlock, ir_.originOf(stuckOp(cycle.front())).range,
                                     "deadlock: ranks " + chain + " wait for each other forever");
    if (!d)
      return;
    for (size_t k = 0; k < shown; ++k) {
      size_t rank = cycle[k];
      auto [needed, head] = blockedOn(rank);
      const Op &producer = ir_.ranks[plan_.from(*head)].ops[head->producer];
      std::string text = "rank " + std::to_string(rank) + " cannot start " +
                         opShortName(ir_, stuckOp(rank)) + ": it needs " +
                         describeMessage(ir_, plan_, *needed) + " from rank " + std::to_string(plan_.from(*head));
      if (needed != head) {
        text += ", which on that channel comes after " + describeMessage(ir_, plan_, *head);
        if (head->consumerStep > step_[rank])
          text += " (received first and held until its op runs)";
      }
      text += ", produced only by rank " + std::to_string(plan_.from(*head)) + "'s " +
              opShortName(ir_, producer) + ";";
      noteAtOp(*d, ir_, rank, stuckOp(rank), text);
    }
    if (shown < cycle.size())
      d->note("the cycle goes through " + std::to_string(cycle.size()) + " ranks; the first " +
              std::to_string(shown) + " are shown");
    d->note("each rank runs its ops in order and a message is received in the order it "
            "was sent; reorder the ops so that no rank waits on a rank that waits on it");
  }

  const ScheduleIR &ir_;
  const CommPlan &plan_;
  std::vector<Channel> channels_;
  std::vector<uint32_t> order_;                   // every channel's messages, see Channel
  // Per rank, flat: rank r's entries are [xBegin_[r], xBegin_[r + 1]).
  std::vector<uint32_t> outgoingBegin_, outgoing_; // the channels each rank sends on
  std::vector<size_t> stepBegin_;
  std::vector<uint8_t> missingInputs_; // per step: messages not yet arrived (at most 2: a pair)
  std::vector<uint32_t> step_;         // next step per rank
  std::vector<uint32_t> ready_;        // ranks that may move
};

} // namespace

bool checkCommunication(const ScheduleIR &ir, const CommPlan &plan, DiagnosticEngine &diags) {
  return ProgressSimulation(ir, plan).run(diags);
}

} // namespace pipec
