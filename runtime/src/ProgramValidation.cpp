#include "pipert/ProgramValidation.h"

#include "pipert/SubOp.h"

#include <map>
#include <set>
#include <tuple>
#include <unordered_set>
#include <vector>

namespace pipert {

namespace {

std::string str(int64_t value) { return std::to_string(value); }
std::string rankTable(int32_t rank, const char *what) { return "kRank" + str(rank) + what; }

// An entry of a table, named as the emitted file names it only when it is
// wrong (names are strings; the checks run over every entry).
struct Entry {
  const char *table; // "kMessages", or "Ops" of "kRank<rank>Ops"
  int32_t rank;      // -1: a table of the whole program
  size_t index;
};
Entry at(const char *table, size_t index) { return {table, -1, index}; }
Entry at(int32_t rank, const char *table, size_t index) { return {table, rank, index}; }
std::string name(const Entry &e) {
  return (e.rank < 0 ? std::string(e.table) : rankTable(e.rank, e.table)) + "[" + str(e.index) +
         "]";
}

[[noreturn]] void fail(const std::string &table, const std::string &problem) {
  throw InvalidProgram("invalid program table " + table + ": " + problem);
}
[[noreturn]] void fail(const Entry &entry, const std::string &problem) {
  fail(name(entry), problem);
}

// `unit` counted on rank `onRank` when that is not -1.
void checkRange(const Entry &entry, const char *what, int64_t value, int64_t end,
                const char *unit, int32_t onRank = -1) {
  if (value < 0 || value >= end)
    fail(entry, std::string(what) + " " + str(value) + " is out of range (the program has " +
                    str(end) + " " + unit + (onRank < 0 ? "" : " on rank " + str(onRank)) + ")");
}

bool isBackward(OpCode kind) { return kind == OpCode::B || kind == OpCode::I; }

// The Program tables, each check relying only on those before it (an index is
// checked before what it indexes is read).
class ProgramChecker {
public:
  explicit ProgramChecker(const Program &p) : p_(p) {}

  void run() {
    checkHeader();
    for (int32_t r = 0; r < p_.numRanks; ++r)
      checkRankOps(r);
    checkCounts();
    checkMessages();
    for (int32_t r = 0; r < p_.numRanks; ++r)
      checkPostingOrder(r);
    for (uint32_t id = 0; id < p_.numMessages; ++id) {
      const ProgramMessage &m = p_.messages[id];
      if (!sent_[id])
        fail(at("kMessages", id), "is in no send order (" + rankTable(m.from, "Sends") + ")");
      if (!received_[id])
        fail(at("kMessages", id), "is in no receive order (" + rankTable(m.to, "Receives") + ")");
    }
    for (int32_t r = 0; r < p_.numRanks; ++r)
      checkInputs(r);
    checkSyncGroups();
  }

private:
  void checkHeader() {
    if (!p_.name || !p_.parameters)
      fail("kProgram", "the schedule name and parameters are missing");
    if (p_.numRanks <= 0)
      fail("kProgram", "numRanks is " + str(p_.numRanks) + ": a program has at least one rank");
    if (p_.numStages <= 0)
      fail("kProgram", "numStages is " + str(p_.numStages) + ": a program has at least one stage");
    if (p_.numMicrobatches < 0)
      fail("kProgram", "numMicrobatches is " + str(p_.numMicrobatches));
    if (!p_.ranks)
      fail("kProgram", "the rank tables (kRanks) are missing");
    if (p_.numMessages > 0 && !p_.messages)
      fail("kProgram", str(p_.numMessages) + " messages but no message table (kMessages)");
    if (p_.numSyncGroups > 0 && !p_.syncGroups)
      fail("kProgram", str(p_.numSyncGroups) + " sync groups but no table (kSyncGroups)");
    if (!p_.predictedPeakActivations)
      fail("kProgram", "the predicted peaks (kPredictedPeakActivations) are missing");
    if (p_.microbatchSizes) // the language's bound (SizeOutOfRange): 1 .. 2^30
      for (int32_t mb = 0; mb < p_.numMicrobatches; ++mb)
        if (p_.microbatchSizes[mb] < 1 || p_.microbatchSizes[mb] > (int32_t(1) << 30))
          fail(at("kMicrobatchSizes", mb), "size " + str(p_.microbatchSizes[mb]) +
                                               " is outside 1 .. 2^30");
    for (int32_t r = 0; r < p_.numRanks; ++r) {
      const RankTable &t = p_.ranks[r];
      if ((t.numOps && !t.ops) || (t.numSends && !t.sends) || (t.numReceives && !t.receives))
        fail(at("kRanks", r), "counts ops, sends or receives but points to no array");
    }
    chunkStage_.resize(p_.numRanks);
    produces_.resize(p_.numRanks);
    consumes_.resize(p_.numRanks);
    sent_.assign(p_.numMessages, false);
    received_.assign(p_.numMessages, false);
  }

  void checkRankOps(int32_t r) {
    const RankTable &t = p_.ranks[r];
    produces_[r].assign(t.numOps, ~0u);
    consumes_[r].assign(t.numOps, ~0u);
    for (uint32_t i = 0; i < t.numOps; ++i) {
      const ProgramOp &op = t.ops[i];
      Entry entry = at(r, "Ops", i);
      if (static_cast<int>(op.kind) >= kNumOpCodes)
        fail(entry, "op kind " + str(static_cast<int>(op.kind)) +
                        " is not F, B, I, W, R, Offload, Reload, Evict, Hold, Return or Load");
      checkRange(entry, "stage", op.stage, p_.numStages, "stages");
      checkRange(entry, "micro-batch", op.microbatch, p_.numMicrobatches, "micro-batches");
      if (op.chunk < 0)
        fail(entry, "chunk " + str(op.chunk) + " is negative");
      if (onPartner(op.kind))
        continue; // the owner's chunk and stage (checkPartnerOp); never in a pair
      auto [it, inserted] = chunkStage_[r].try_emplace(op.chunk, op.stage);
      if (!inserted && it->second != op.stage)
        fail(entry, "chunk " + str(op.chunk) + " holds stage " + str(it->second) +
                        " in an earlier op of this rank, not stage " + str(op.stage));
      if (op.pairedWithNext > 1)
        fail(entry, "pairedWithNext is " + str(op.pairedWithNext) + ", not 0 or 1");
      if (op.pairedWithNext) {
        if (i + 1 >= t.numOps)
          fail(entry, "pairs with the next op, but it is the rank's last");
        const ProgramOp &next = t.ops[i + 1];
        if (op.kind != OpCode::F || !isBackward(next.kind) || next.pairedWithNext)
          fail(entry, "an overlap pair is a forward and then a backward (B or I)");
      }
    }
  }

  // The runtime builds numStages stages and numMicrobatches inputs: each must
  // run ops, which also bounds them by the tables' real size.
  void checkCounts() {
    uint64_t ops = 0;
    for (int32_t r = 0; r < p_.numRanks; ++r)
      ops += p_.ranks[r].numOps;
    for (auto [count, what] : {std::pair{p_.numStages, "numStages"},
                               std::pair{p_.numMicrobatches, "numMicrobatches"}})
      if (uint64_t(count) > ops)
        fail("kProgram", std::string(what) + " is " + str(count) + " but the ranks run only " +
                             str(int64_t(ops)) + " ops");
    std::vector<bool> stageRuns(size_t(p_.numStages)), microbatchRuns(size_t(p_.numMicrobatches));
    for (int32_t r = 0; r < p_.numRanks; ++r)
      for (uint32_t i = 0; i < p_.ranks[r].numOps; ++i) {
        stageRuns[size_t(p_.ranks[r].ops[i].stage)] = true;
        microbatchRuns[size_t(p_.ranks[r].ops[i].microbatch)] = true;
      }
    for (size_t s = 0; s < stageRuns.size(); ++s)
      if (!stageRuns[s])
        fail("kProgram", "stage " + str(int64_t(s)) + " runs no op");
    for (size_t mb = 0; mb < microbatchRuns.size(); ++mb)
      if (!microbatchRuns[mb])
        fail("kProgram", "micro-batch " + str(int64_t(mb)) + " runs no op");
  }

  void checkMessages() {
    for (uint32_t id = 0; id < p_.numMessages; ++id) {
      const ProgramMessage &m = p_.messages[id];
      Entry entry = at("kMessages", id);
      if (m.gradient >= kNumMessageKinds)
        fail(entry, "kind " + str(m.gradient) +
                        " is not activation (0), gradient (1), evicted (2) or returned (3)");
      checkRange(entry, "from rank", m.from, p_.numRanks, "ranks");
      checkRange(entry, "to rank", m.to, p_.numRanks, "ranks");
      if (m.from == m.to)
        fail(entry, "goes from rank " + str(m.from) + " to itself");
      checkRange(entry, "stage", m.stage, p_.numStages, "stages");
      checkRange(entry, "micro-batch", m.microbatch, p_.numMicrobatches, "micro-batches");
      checkRange(entry, "producer op", m.producerOp, p_.ranks[m.from].numOps, "ops", m.from);
      checkRange(entry, "consumer op", m.consumerOp, p_.ranks[m.to].numOps, "ops", m.to);
      const ProgramOp &producer = p_.ranks[m.from].ops[m.producerOp];
      const ProgramOp &consumer = p_.ranks[m.to].ops[m.consumerOp];
      bool gradient = m.gradient == kGradientMessage;
      bool fits;
      if (m.gradient >= kEvictedMessage) { // a stage's stored state, to the partner and back
        bool evicted = m.gradient == kEvictedMessage;
        fits = producer.kind == (evicted ? OpCode::Evict : OpCode::Return) &&
               consumer.kind == (evicted ? OpCode::Hold : OpCode::Load) &&
               producer.stage == m.stage && consumer.stage == m.stage &&
               producer.chunk == consumer.chunk && producer.microbatch == m.microbatch &&
               consumer.microbatch == m.microbatch;
      } else {
        int32_t next = gradient ? m.stage - 1 : m.stage + 1;
        fits = (gradient ? isBackward(producer.kind) : producer.kind == OpCode::F) &&
               (gradient ? isBackward(consumer.kind) : consumer.kind == OpCode::F) &&
               producer.stage == m.stage && consumer.stage == next &&
               producer.microbatch == m.microbatch && consumer.microbatch == m.microbatch;
      }
      if (!fits)
        fail(entry, std::string(m.gradient == kEvictedMessage    ? "an evicted activation"
                                : m.gradient == kReturnedMessage ? "a returned activation"
                                : gradient                       ? "a gradient"
                                                                 : "an activation") +
                        " of stage " +
                        str(m.stage) + ", micro-batch " + str(m.microbatch) +
                        ", does not fit its producer op " + str(m.producerOp) + " on rank " +
                        str(m.from) + " or consumer op " + str(m.consumerOp) + " on rank " +
                        str(m.to));
      if (produces_[m.from][m.producerOp] != ~0u)
        fail(entry, "op " + str(m.producerOp) + " on rank " + str(m.from) +
                        " already produces message " + str(produces_[m.from][m.producerOp]));
      if (consumes_[m.to][m.consumerOp] != ~0u)
        fail(entry, "op " + str(m.consumerOp) + " on rank " + str(m.to) +
                        " already consumes message " + str(consumes_[m.to][m.consumerOp]));
      produces_[m.from][m.producerOp] = id;
      consumes_[m.to][m.consumerOp] = id;
    }
  }

  void checkPostingOrder(int32_t r) {
    const RankTable &t = p_.ranks[r];
    for (int receive = 0; receive < 2; ++receive) {
      const uint32_t *ids = receive ? t.receives : t.sends;
      uint32_t count = receive ? t.numReceives : t.numSends;
      std::vector<bool> &seen = receive ? received_ : sent_;
      for (uint32_t k = 0; k < count; ++k) {
        Entry entry = at(r, receive ? "Receives" : "Sends", k);
        checkRange(entry, "message", ids[k], p_.numMessages, "messages");
        const ProgramMessage &m = p_.messages[ids[k]];
        if ((receive ? m.to : m.from) != r)
          fail(entry, "message " + str(ids[k]) + " goes from rank " + str(m.from) + " to rank " +
                          str(m.to) + ", not " + (receive ? "to" : "from") + " this rank");
        if (seen[ids[k]])
          fail(entry, "message " + str(ids[k]) + " is posted twice");
        seen[ids[k]] = true;
      }
    }
  }

  // Each op's inputs come by message or from an earlier step of its own rank
  // (a pair's halves run at once, so neither may need the other). A replay (R)
  // of a chunk's micro-batch comes after its forward, once (never in a pair:
  // checkRankOps),
  // and before its backward; a backward of a replayed micro-batch waits for R.
  // Offload and Reload follow the compiler's MemoryOpPairs: once each per
  // (chunk, micro-batch), Offload after the forward, Reload after the Offload,
  // both before the backward, which waits for the Reload; a recomputed
  // micro-batch is not also moved.
  void checkInputs(int32_t r) {
    const RankTable &t = p_.ranks[r];
    // Done so far: (F / B or I / W, stage, micro-batch) on any chunk, and
    // (F / B or I / W, chunk, micro-batch) on a given one (a chunk holds one
    // stage). Sets, not tables over stages x micro-batches: a bad table's
    // counts must not decide how much memory the check takes.
    std::unordered_set<uint64_t> done, doneOnChunk;
    auto key = [](int group, int64_t where, int32_t mb) {
      return (uint64_t(group) << 62) | (uint64_t(uint32_t(where)) << 31) | uint64_t(uint32_t(mb));
    };
    auto group = [](OpCode kind) {
      return kind == OpCode::F ? 0 : kind == OpCode::W ? 2 : kind == OpCode::R ? 3 : 1;
    };
    std::unordered_set<uint64_t> replayed; // (R, chunk, micro-batch) of every R on the rank
    // (chunk, micro-batch) of every Offload and Reload (Evict and Load) on the
    // rank, and of those done so far.
    Moves moves;
    for (uint32_t i = 0; i < t.numOps; ++i) {
      const ProgramOp &op = t.ops[i];
      uint64_t k = key(0, op.chunk, op.microbatch);
      switch (op.kind) {
      case OpCode::R: replayed.insert(key(3, op.chunk, op.microbatch)); break;
      case OpCode::Offload: moves.offloads.insert(k); break;
      case OpCode::Reload: moves.reloads.insert(k); break;
      case OpCode::Evict: moves.evicts.insert(k); break;
      case OpCode::Load: moves.loads.insert(k); break;
      case OpCode::Return:
        if (produces_[r][i] != ~0u)
          moves.returns.insert({p_.messages[produces_[r][i]].to, op.chunk, op.microbatch});
        break;
      default: break;
      }
    }
    for (uint32_t i = 0; i < t.numOps; ++i) {
      uint32_t last = t.ops[i].pairedWithNext ? i + 1 : i;
      for (uint32_t j = i; j <= last; ++j) {
        const ProgramOp &op = t.ops[j];
        Entry entry = at(r, "Ops", j);
        if (onPartner(op.kind)) {
          checkPartnerOp(entry, r, j, op, moves);
          continue;
        }
        if (isMemoryOp(op.kind)) {
          checkMemoryOp(entry, r, j, op, doneOnChunk.count(key(0, op.chunk, op.microbatch)) != 0,
                        doneOnChunk.count(key(1, op.chunk, op.microbatch)) != 0,
                        replayed.count(key(3, op.chunk, op.microbatch)) != 0, moves);
          continue;
        }
        uint64_t moved = key(0, op.chunk, op.microbatch);
        if (isBackward(op.kind) && moves.offloads.count(moved) && !moves.reloaded.count(moved))
          fail(entry, "the backward of stage " + str(op.stage) + ", micro-batch " +
                          str(op.microbatch) + " comes before its Reload on this rank and chunk");
        if (isBackward(op.kind) && moves.evicts.count(moved) && !moves.loaded.count(moved))
          fail(entry, "the backward of stage " + str(op.stage) + ", micro-batch " +
                          str(op.microbatch) + " comes before its Load on this rank and chunk");
        bool forward = op.kind == OpCode::F;
        bool needsInput = forward ? op.stage > 0 : isBackward(op.kind) && op.stage + 1 < p_.numStages;
        if (needsInput && consumes_[r][j] == ~0u &&
            !done.count(key(forward ? 0 : 1, forward ? op.stage - 1 : op.stage + 1, op.microbatch)))
          fail(entry, "its input comes neither by a message nor from an earlier op of this rank");
        bool weight = op.kind == OpCode::W;
        if (op.kind == OpCode::R) {
          if (!doneOnChunk.count(key(0, op.chunk, op.microbatch)))
            fail(entry, "the replay of stage " + str(op.stage) + ", micro-batch " +
                            str(op.microbatch) + " comes before its forward on this rank and chunk");
          if (doneOnChunk.count(key(3, op.chunk, op.microbatch)))
            fail(entry, "stage " + str(op.stage) + ", micro-batch " + str(op.microbatch) +
                            " is replayed twice on this rank and chunk");
          if (doneOnChunk.count(key(1, op.chunk, op.microbatch)))
            fail(entry, "the replay of stage " + str(op.stage) + ", micro-batch " +
                            str(op.microbatch) + " comes after its backward");
          continue;
        }
        if (isBackward(op.kind) && replayed.count(key(3, op.chunk, op.microbatch)) &&
            !doneOnChunk.count(key(3, op.chunk, op.microbatch)))
          fail(entry, "the backward of stage " + str(op.stage) + ", micro-batch " +
                          str(op.microbatch) + " comes before its replay (R) on this rank and chunk");
        if (!forward && !doneOnChunk.count(key(weight ? 1 : 0, op.chunk, op.microbatch)))
          fail(entry, std::string(weight ? "the weight gradient" : "the backward") + " of stage " +
                          str(op.stage) + ", micro-batch " + str(op.microbatch) +
                          " comes before its " + (weight ? "input-gradient half" : "forward") +
                          " on this rank and chunk");
      }
      for (uint32_t j = i; j <= last; ++j) {
        const ProgramOp &op = t.ops[j];
        if (isMemoryOp(op.kind))
          continue; // recorded by checkMemoryOp
        done.insert(key(group(op.kind), op.stage, op.microbatch));
        doneOnChunk.insert(key(group(op.kind), op.chunk, op.microbatch));
      }
      i = last;
    }
  }
  // The (chunk, micro-batch) keys of a rank's moves (key(0, chunk, mb) of
  // checkInputs): every Offload, Reload, Evict and Load of the rank, those done
  // so far, where each Evict went; on a partner, (owner, chunk, mb) of every
  // Return, and of the Holds and Returns so far.
  struct Moves {
    std::unordered_set<uint64_t> offloads, reloads, evicts, loads;
    std::unordered_set<uint64_t> offloaded, reloaded, evicted, loaded;
    std::map<uint64_t, int32_t> evictedTo;
    std::set<std::tuple<int32_t, int32_t, int32_t>> returns, held, returned;
  };

  // One Offload, Reload, Evict or Load of (op.chunk, op.microbatch) (op `i`
  // of rank `r`), given what ran before it on its rank and chunk: the forward,
  // the backward (B or I), whether an R replays it; the moves of the rank
  // (recorded here). Mirrors the compiler's MemoryOpPairs.
  void checkMemoryOp(const Entry &entry, int32_t r, uint32_t i, const ProgramOp &op,
                     bool forwardDone, bool backwardDone, bool replayed, Moves &moves) {
    uint64_t k = (uint64_t(uint32_t(op.chunk)) << 31) | uint64_t(uint32_t(op.microbatch));
    bool transfer = isTransfer(op.kind);
    bool leaves = movesOff(op.kind);
    const char *out = transfer ? "Evict" : "Offload", *back = transfer ? "Load" : "Reload";
    std::string what = std::string("the ") + opCodeName(op.kind) + " of stage " + str(op.stage) +
                       ", micro-batch " + str(op.microbatch);
    std::unordered_set<uint64_t> &gone = transfer ? moves.evicted : moves.offloaded;
    std::unordered_set<uint64_t> &came = transfer ? moves.loaded : moves.reloaded;
    if (leaves) {
      if (!forwardDone)
        fail(entry, what + " comes before its forward on this rank and chunk");
      if (replayed)
        fail(entry, what + ": a recomputed micro-batch (R) keeps no activation to move");
      if (!(transfer ? moves.loads : moves.reloads).count(k))
        fail(entry, what + " has no " + back +
                        " on this rank and chunk: its backward would find nothing stored");
      if ((transfer ? moves.offloads : moves.evicts).count(k))
        fail(entry, "stage " + str(op.stage) + ", micro-batch " + str(op.microbatch) +
                        " is both offloaded and evicted on this rank and chunk");
    } else if (!gone.count(k)) {
      fail(entry, what + " comes before its " + out + " on this rank and chunk (nothing to " +
                      (transfer ? "load" : "reload") + ")");
    }
    if (!(leaves ? gone : came).insert(k).second)
      fail(entry, "stage " + str(op.stage) + ", micro-batch " + str(op.microbatch) + " is " +
                      (leaves ? (transfer ? "evicted" : "offloaded")
                              : (transfer ? "loaded" : "reloaded")) +
                      " twice on this rank and chunk");
    if (backwardDone)
      fail(entry, what + " comes after its backward on this rank and chunk");
    if (!transfer)
      return;
    // The message that carries it (checkMessages matched its ends' kinds).
    uint32_t id = leaves ? produces_[r][i] : consumes_[r][i];
    if (id == ~0u)
      fail(entry, what + (leaves ? " sends no evicted message (to a partner's Hold)"
                                 : " receives no returned message (from a partner's Return)"));
    const ProgramMessage &m = p_.messages[id];
    if (leaves) {
      moves.evictedTo[k] = m.to;
    } else if (moves.evictedTo.at(k) != m.from) {
      fail(entry, what + " receives from rank " + str(m.from) + ", but its Evict went to rank " +
                      str(moves.evictedTo.at(k)) + ": rank " + str(m.from) + " holds nothing of it");
    }
  }

  // A Hold or Return on the partner of an owner's Evict and Load, keyed by the
  // owner (the other end of its message), chunk and micro-batch.
  void checkPartnerOp(const Entry &entry, int32_t r, uint32_t i, const ProgramOp &op,
                      Moves &moves) {
    bool hold = op.kind == OpCode::Hold;
    std::string what = std::string("the ") + opCodeName(op.kind) + " of stage " + str(op.stage) +
                       ", micro-batch " + str(op.microbatch);
    uint32_t id = hold ? consumes_[r][i] : produces_[r][i];
    if (id == ~0u)
      fail(entry, what + (hold ? " receives no evicted message: a Hold without its Evict"
                               : " sends no returned message: a Return without its Load"));
    int32_t owner = hold ? p_.messages[id].from : p_.messages[id].to;
    std::tuple<int32_t, int32_t, int32_t> k{owner, op.chunk, op.microbatch};
    std::string of = " (rank " + str(owner) + "'s chunk " + str(op.chunk) + ")";
    if (hold) {
      if (!moves.returns.count(k))
        fail(entry, what + of + " has no Return on this rank: the owner's Load would find "
                                "nothing held");
      if (!moves.held.insert(k).second)
        fail(entry, "stage " + str(op.stage) + ", micro-batch " + str(op.microbatch) + of +
                        " is held twice on this rank");
    } else {
      if (!moves.held.count(k))
        fail(entry, what + of + " comes before its Hold on this rank (nothing held to return)");
      if (!moves.returned.insert(k).second)
        fail(entry, "stage " + str(op.stage) + ", micro-batch " + str(op.microbatch) + of +
                        " is returned twice on this rank");
    }
  }

  void checkSyncGroups() {
    for (uint32_t g = 0; g < p_.numSyncGroups; ++g) {
      const SyncGroupTable &group = p_.syncGroups[g];
      Entry entry = at("kSyncGroups", g);
      checkRange(entry, "stage", group.stage, p_.numStages, "stages");
      if (group.size > 0 && (!group.ranks || !group.chunks))
        fail(entry, "has " + str(group.size) + " slots but no rank or chunk array");
      for (uint32_t k = 0; k < group.size; ++k) {
        checkRange(entry, "rank", group.ranks[k], p_.numRanks, "ranks");
        auto it = chunkStage_[group.ranks[k]].find(group.chunks[k]);
        if (it == chunkStage_[group.ranks[k]].end() || it->second != group.stage)
          fail(entry, "slot " + str(k) + " (rank " + str(group.ranks[k]) + ", chunk " +
                          str(group.chunks[k]) + ") does not hold stage " + str(group.stage));
      }
    }
  }

  const Program &p_;
  std::vector<std::map<int, int32_t>> chunkStage_;       // per rank: chunk -> stage
  std::vector<std::vector<uint32_t>> produces_, consumes_; // per rank, op: message id or ~0
  std::vector<bool> sent_, received_;
};

// One rank's commands, in the order its host thread enqueues them.
class StreamChecker {
public:
  StreamChecker(const Program &p, const StreamProgram &s) : p_(p), s_(s) {}

  void run() {
    if (!s_.ranks)
      fail("kStreams", "the rank stream tables (kRankStreams) are missing");
    sentBy_.assign(p_.numMessages, false);
    receivedBy_.assign(p_.numMessages, false);
    for (int32_t r = 0; r < p_.numRanks; ++r)
      checkRank(r);
    for (uint32_t id = 0; id < p_.numMessages; ++id) {
      const ProgramMessage &m = p_.messages[id];
      if (!sentBy_[id])
        fail(at("kMessages", id), "is never sent by " + rankTable(m.from, "Commands"));
      if (!receivedBy_[id])
        fail(at("kMessages", id), "is never received by " + rankTable(m.to, "Commands"));
    }
    for (auto &[key, order] : sends_) {
      const std::vector<Posted> &receives = receives_[key];
      for (size_t k = 0; k < order.size(); ++k)
        if (receives[k].message != order[k].message) {
          const ProgramMessage &m = p_.messages[order[k].message];
          fail(at(m.to, "Commands", receives[k].command),
               "receive " + str(k) + " from rank " + str(m.from) + " on its channel is message " +
                   str(receives[k].message) + ", but send " + str(k) + " there (" +
                   name(at(m.from, "Commands", order[k].command)) + ") is message " +
                   str(order[k].message) + ": a channel delivers in posting order");
        }
    }
  }

private:
  struct Posted {
    uint32_t message, command;
  };

  void checkRank(int32_t r) {
    const RankStreams &mine = s_.ranks[r];
    const RankTable &t = p_.ranks[r];
    if (mine.numCommands && !mine.commands)
      fail(at("kRankStreams", r), "counts " + str(mine.numCommands) + " commands but points to none");
    if (mine.numStreams < kFirstChannelStream)
      fail(at("kRankStreams", r), "has " + str(mine.numStreams) +
                                      " streams; a rank has at least the compute and expert streams");
    // The runtime creates every stream and event: bound them by what a program
    // can use (a stream per peer, direction and kind; an event per command).
    // (A rank with memory ops has one copy stream more, and one with
    // transfers the channels of the evicted and returned kinds.)
    bool copies = false, transfers = false;
    for (uint32_t i = 0; i < t.numOps && !transfers; ++i) {
      copies |= isMemoryOp(t.ops[i].kind);
      transfers |= isTransfer(t.ops[i].kind);
    }
    int64_t maxStreams = kFirstChannelStream + (transfers ? 8 : 4) * int64_t(p_.numRanks - 1) +
                         (copies ? 1 : 0);
    if (mine.numStreams > maxStreams)
      fail(at("kRankStreams", r), "has " + str(mine.numStreams) + " streams; " +
                                      str(p_.numRanks) + " ranks need at most " + str(maxStreams));
    if (mine.numEvents > mine.numCommands)
      fail(at("kRankStreams", r), "has " + str(mine.numEvents) + " events for " +
                                      str(mine.numCommands) + " commands to record them");
    std::vector<int> parts(t.numOps, 0);
    std::vector<bool> recorded(mine.numEvents, false);
    // Per stream past the expert stream: what it does (a channel's messages or
    // the copies of Offload/Reload, never both), by its first command.
    enum class Role : uint8_t { Unused, Channel, Copy };
    std::vector<Role> role(mine.numStreams, Role::Unused);
    auto takeRole = [&](const Entry &entry, uint16_t stream, Role wanted) {
      if (stream < kFirstChannelStream)
        return;
      if (role[stream] != Role::Unused && role[stream] != wanted)
        fail(entry, "stream " + str(stream) +
                        " both moves messages and runs Offload/Reload or BPipe's transfers (copies)");
      role[stream] = wanted;
    };
    std::vector<uint32_t> incoming(t.numOps, ~0u);
    std::vector<bool> arrived(p_.numMessages, false);
    for (uint32_t id = 0; id < p_.numMessages; ++id)
      if (p_.messages[id].to == r)
        incoming[p_.messages[id].consumerOp] = id;
    for (uint32_t k = 0; k < mine.numCommands; ++k) {
      const StreamCommand &c = mine.commands[k];
      Entry entry = at(r, "Commands", k);
      if (static_cast<int>(c.cmd) >= kNumStreamCmds)
        fail(entry, "command " + str(static_cast<int>(c.cmd)) + " is unknown");
      if (static_cast<int>(c.part) >= kNumRunParts)
        fail(entry, "part " + str(static_cast<int>(c.part)) + " is unknown");
      if (c.cmd != StreamCmd::Run && c.part != RunPart::Whole)
        fail(entry, std::string("a ") + streamCmdName(c.cmd) + " names a part");
      checkRange(entry, "stream", c.stream, mine.numStreams, "streams on this rank");
      switch (c.cmd) {
      case StreamCmd::Run: {
        checkRange(entry, "op", c.arg, t.numOps, "ops on this rank");
        const ProgramOp &op = t.ops[c.arg];
        if (isMemoryOp(op.kind)) { // on the compute stream, or a copy stream of its own
          if (c.stream == kExpertStream)
            fail(entry, std::string("runs ") + opCodeName(op.kind) + " op " + str(c.arg) +
                            " on the expert stream");
          if (c.part != RunPart::Whole)
            fail(entry, std::string("runs a part of ") + opCodeName(op.kind) + " op " +
                            str(c.arg) + ", which has none");
          takeRole(entry, c.stream, Role::Copy);
        } else if (c.stream >= kFirstChannelStream) {
          fail(entry, "runs op " + str(c.arg) + " on channel stream " + str(c.stream));
        }
        if (parts[c.arg] == 0 && incoming[c.arg] != ~0u && !arrived[incoming[c.arg]])
          fail(entry, "runs op " + str(c.arg) + " before receiving its input, message " +
                          str(incoming[c.arg]));
        bool inOrder;
        if (c.part == RunPart::Whole) {
          inOrder = parts[c.arg] == 0;
        } else {
          SubOp sub = subOpOf(c.part);
          int position = op.kind == OpCode::F ? forwardPosition(sub) : backwardPosition(sub);
          inOrder = op.kind != OpCode::W && position == parts[c.arg];
        }
        if (!inOrder)
          fail(entry, std::string("runs ") + runPartName(c.part) + " of op " + str(c.arg) +
                          " out of order (" + str(parts[c.arg]) + " of its 4 parts ran before)");
        parts[c.arg] += c.part == RunPart::Whole ? 4 : 1;
        break;
      }
      case StreamCmd::Send:
      case StreamCmd::Receive: {
        bool send = c.cmd == StreamCmd::Send;
        checkRange(entry, "message", c.arg, p_.numMessages, "messages");
        const ProgramMessage &m = p_.messages[c.arg];
        if ((send ? m.from : m.to) != r)
          fail(entry, std::string(send ? "sends" : "receives") + " message " + str(c.arg) +
                          ", which goes from rank " + str(m.from) + " to rank " + str(m.to));
        if (c.stream < kFirstChannelStream)
          fail(entry, "moves message " + str(c.arg) + " on stream " + str(c.stream) +
                          ", not on a channel stream");
        takeRole(entry, c.stream, Role::Channel);
        std::vector<bool> &done = send ? sentBy_ : receivedBy_;
        if (done[c.arg])
          fail(entry, std::string(send ? "sends" : "receives") + " message " + str(c.arg) +
                          " a second time");
        done[c.arg] = true;
        if (send && parts[m.producerOp] < 4)
          fail(entry, "sends message " + str(c.arg) + " before op " + str(m.producerOp) +
                          " produced it");
        arrived[c.arg] = !send;
        (send ? sends_ : receives_)[channelKey(m)].push_back({c.arg, k});
        break;
      }
      case StreamCmd::RecordEvent:
        checkRange(entry, "event", c.arg, mine.numEvents, "events on this rank");
        if (recorded[c.arg])
          fail(entry, "records event " + str(c.arg) + " a second time");
        recorded[c.arg] = true;
        break;
      case StreamCmd::WaitEvent:
        checkRange(entry, "event", c.arg, mine.numEvents, "events on this rank");
        if (!recorded[c.arg])
          fail(entry, "waits on event " + str(c.arg) +
                          " before it is recorded (the wait would not wait)");
        break;
      }
    }
    for (uint32_t i = 0; i < t.numOps; ++i)
      if (parts[i] < 4)
        fail(rankTable(r, "Commands"), "op " + str(i) + " runs " + str(parts[i]) + " of its 4 parts");
  }

  const Program &p_;
  const StreamProgram &s_;
  std::vector<bool> sentBy_, receivedBy_;
  std::map<uint64_t, std::vector<Posted>> sends_, receives_; // per channel, in command order
};

} // namespace

void validateProgram(const Program &program) { ProgramChecker(program).run(); }

void validateProgram(const Program &program, const StreamProgram &streams) {
  ProgramChecker(program).run();
  StreamChecker(program, streams).run();
}

std::string programTableError(const Program &program) {
  try {
    validateProgram(program);
  } catch (const InvalidProgram &e) {
    return e.what();
  }
  return "";
}

std::string streamProgramError(const Program &program, const StreamProgram &streams) {
  try {
    validateProgram(program, streams);
  } catch (const InvalidProgram &e) {
    return e.what();
  }
  return "";
}

} // namespace pipert
