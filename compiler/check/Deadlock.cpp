// Communication: proves that the posting order of comm/CommPlan.h cannot hang.
//  1. Message order: on each channel between two ranks NCCL matches the i-th send
//     with the i-th receive. If they are different messages, NCCL silently
//     delivers the wrong tensor: an error before anything else.
//  2. Progress: each rank runs its steps in order; a message moves once produced
//     and at the head of its channel. Simulated event by event in linear time;
//     ranks left unfinished are deadlocked, and the error shows the cycle of
//     ranks waiting for each other, with the op each one is stuck before.
#include "check/CheckPasses.h"
#include "check/OpText.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>

namespace pipec {

namespace {

std::string describeMessage(const Message &m) {
  return std::string(m.kind == MessageKind::Activation ? "the activation" : "the gradient") +
         " of stage " + std::to_string(m.stage) + ", micro-batch " + std::to_string(m.microbatch);
}

std::string ordinal(size_t n) {
  const char *suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                       : n % 10 == 1                    ? "st"
                       : n % 10 == 2                    ? "nd"
                       : n % 10 == 3                    ? "rd"
                                                        : "th";
  return std::to_string(n) + suffix;
}

bool checkMessageOrder(const ScheduleIR &ir, const CommPlan &plan, DiagnosticEngine &diags) {
  llvm::DenseMap<uint64_t, std::vector<uint32_t>> sent, received;
  for (const RankComm &rank : plan.ranks) {
    for (uint32_t id : rank.sends)
      sent[channelKey(plan.messages[id])].push_back(id);
    for (uint32_t id : rank.receives)
      received[channelKey(plan.messages[id])].push_back(id);
  }
  bool ok = true;
  for (const auto &[key, sends] : sent) {
    const std::vector<uint32_t> &receives = received[key];
    for (size_t i = 0; i < sends.size(); ++i) {
      if (sends[i] == receives[i])
        continue;
      const Message &s = plan.messages[sends[i]], &r = plan.messages[receives[i]];
      const Op &producer = ir.ranks[s.from].ops[s.producer];
      const Op &consumer = ir.ranks[r.to].ops[r.consumer];
      if (Diagnostic *d = reportAtOp(
              diags, DiagKind::MessageOrderMismatch, ir, s.from, producer,
              "rank " + std::to_string(s.from) + "'s " + ordinal(i + 1) + " " +
                  (s.kind == MessageKind::Activation ? "activation" : "gradient") +
                  " sent to rank " + std::to_string(s.to) + " is " + describeMessage(s) +
                  ", but rank " + std::to_string(r.to) + "'s " + ordinal(i + 1) +
                  " receive on that channel expects " + describeMessage(r))) {
        noteAtOp(*d, ir, r.to, consumer, "that receive is posted for " + opShortName(ir, consumer));
        d->note("NCCL matches sends and receives between two ranks in posting order, so it "
                "would deliver the wrong tensor without any error; reorder the ops so both "
                "ranks handle these micro-batches in the same order");
      }
      ok = false;
      break; // one report per channel
    }
  }
  return ok;
}

// Runs every rank's compute stream and every channel until nothing can move.
// Requires consistent channel orders (checkMessageOrder), so a channel is one
// queue of messages: its head moves as soon as its producing step is done.
class ProgressSimulation {
public:
  ProgressSimulation(const ScheduleIR &ir, const CommPlan &plan) : ir_(ir), plan_(plan) {}

  // Returns false (after reporting) when some rank can never finish.
  bool run(DiagnosticEngine &diags) {
    buildChannels();
    size_t ranks = plan_.ranks.size();
    step_.assign(ranks, 0);
    missingInputs_.resize(ranks);
    for (size_t r = 0; r < ranks; ++r)
      missingInputs_[r].assign(plan_.ranks[r].stepOp.size(), 0);
    for (const Message &m : plan_.messages)
      ++missingInputs_[m.to][m.consumerStep];
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
  struct Channel {
    std::vector<uint32_t> messages; // in send order (= receive order)
    size_t head = 0;
  };

  void buildChannels() {
    llvm::DenseMap<uint64_t, uint32_t> ids;
    channelOf_.resize(plan_.messages.size());
    positionInChannel_.resize(plan_.messages.size());
    outgoing_.resize(plan_.ranks.size());
    for (const RankComm &rank : plan_.ranks)
      for (uint32_t id : rank.sends) {
        auto [it, inserted] = ids.try_emplace(channelKey(plan_.messages[id]), channels_.size());
        if (inserted) {
          channels_.emplace_back();
          outgoing_[plan_.messages[id].from].push_back(it->second);
        }
        positionInChannel_[id] = channels_[it->second].messages.size();
        channels_[it->second].messages.push_back(id);
        channelOf_[id] = it->second;
      }
  }

  bool produced(const Message &m) const { return step_[m.from] > m.producerStep; }

  // Runs rank r's steps as far as their inputs allow, then delivers what its
  // finished steps produced.
  void advance(size_t r) {
    const RankComm &comm = plan_.ranks[r];
    while (step_[r] < comm.stepOp.size() && missingInputs_[r][step_[r]] == 0)
      ++step_[r];
    for (uint32_t c : outgoing_[r]) {
      Channel &channel = channels_[c];
      while (channel.head < channel.messages.size() &&
             produced(plan_.messages[channel.messages[channel.head]])) {
        const Message &m = plan_.messages[channel.messages[channel.head++]];
        if (--missingInputs_[m.to][m.consumerStep] == 0)
          ready_.push_back(m.to);
      }
    }
  }

  // The message a stuck rank waits for, and the one at the head of its channel
  // (an earlier message of the same channel, or the same one).
  std::pair<const Message *, const Message *> blockedOn(size_t r) const {
    // Receives are in consumption order: find the stuck step's first, then the
    // first of the step's that has not arrived.
    const std::vector<uint32_t> &receives = plan_.ranks[r].receives;
    auto it = std::lower_bound(receives.begin(), receives.end(), step_[r],
                               [&](uint32_t id, size_t step) {
                                 return plan_.messages[id].consumerStep < step;
                               });
    for (; it != receives.end() && plan_.messages[*it].consumerStep == step_[r]; ++it) {
      const Channel &channel = channels_[channelOf_[*it]];
      if (positionInChannel_[*it] >= channel.head)
        return {&plan_.messages[*it], &plan_.messages[channel.messages[channel.head]]};
    }
    return {nullptr, nullptr}; // unreachable for a stuck rank
  }

  void reportCycle(size_t start, DiagnosticEngine &diags) {
    // Each stuck rank waits for the rank whose step would unblock it; follow
    // those edges until a rank repeats.
    std::vector<size_t> path;
    size_t r = start;
    while (std::find(path.begin(), path.end(), r) == path.end()) {
      path.push_back(r);
      r = static_cast<size_t>(blockedOn(r).second->from);
    }
    std::vector<size_t> cycle(std::find(path.begin(), path.end(), r), path.end());
    std::string chain;
    for (size_t rank : cycle)
      chain += std::to_string(rank) + " -> ";
    chain += std::to_string(cycle.front());

    auto stuckOp = [&](size_t rank) -> const Op & {
      return ir_.ranks[rank].ops[plan_.ranks[rank].stepOp[step_[rank]]];
    };
    Diagnostic *d = diags.reportOnce(DiagKind::Deadlock, stuckOp(cycle.front()).origin->range,
                                     "deadlock: ranks " + chain + " wait for each other forever");
    if (!d)
      return;
    for (size_t rank : cycle) {
      auto [needed, head] = blockedOn(rank);
      const Op &producer = ir_.ranks[head->from].ops[head->producer];
      std::string text = "rank " + std::to_string(rank) + " cannot start " +
                         opShortName(ir_, stuckOp(rank)) + ": it needs " +
                         describeMessage(*needed) + " from rank " + std::to_string(head->from);
      if (needed != head)
        text += ", which on that channel comes after " + describeMessage(*head);
      text += ", produced only by rank " + std::to_string(head->from) + "'s " +
              opShortName(ir_, producer) + ";";
      noteAtOp(*d, ir_, rank, stuckOp(rank), text);
    }
    d->note("each rank runs its ops in order and a message is received in the order it "
            "was sent; reorder the ops so that no rank waits on a rank that waits on it");
  }

  const ScheduleIR &ir_;
  const CommPlan &plan_;
  std::vector<Channel> channels_;
  std::vector<uint32_t> channelOf_;               // message -> channel
  std::vector<size_t> positionInChannel_;         // message -> index in its channel
  std::vector<std::vector<uint32_t>> outgoing_;   // rank -> channels it sends on
  std::vector<size_t> step_;                      // next step per rank
  std::vector<std::vector<uint32_t>> missingInputs_; // per rank and step
  std::vector<size_t> ready_;                     // ranks that may move
};

} // namespace

bool checkCommunication(const ScheduleIR &ir, const CommPlan &plan, DiagnosticEngine &diags) {
  if (!checkMessageOrder(ir, plan, diags))
    return false;
  return ProgressSimulation(ir, plan).run(diags);
}

} // namespace pipec
