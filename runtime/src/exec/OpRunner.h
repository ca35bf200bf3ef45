// What a Run command of the CPU stream engine does (exec/StreamEngine.h): op
// `op` of a rank, whole (forward, backward, backwardInput, backwardWeight) or
// one part of an overlap pair's half (forwardPart, backwardPart), so the two
// halves interleave part by part as the compiler's overlap plan orders them.
// The first part of an op takes its input (the message's slot, a same-rank
// hand-off, the micro-batch's data, or the loss's gradient at the last stage)
// and a fresh output buffer; the last part hands the output on. The program's
// events order every slot's writer before its reader, so the slots need no lock.
//
// A stage is not thread-safe: each (rank, chunk) slot has a mutex its parts
// hold (in stream threads both halves of a pair may share a chunk). The live
// activations of each rank are counted from the stages' own counts before and
// after every part, and the peak compared with the compiler's prediction.
//
// Recomputation: an F whose (chunk, micro-batch) the rank replays with an R
// keeps only its input. After its last part the stage's stored state is
// discarded (counted while the forward ran, as the compiler counts it) and the
// input goes to the R's op state; the R runs the same forward on it again
// (the stage stores its state once more, for the backward) and throws its
// output away: the F's output went on already, and a forward is deterministic,
// so the backward sees bit-identical state.
//
// Offload and Reload (moveStored): an Offload takes the tensors the stage
// stores for its (chunk, micro-batch) out of the stage (Stage::takeStored),
// copies them into buffers of the rank's host pool and frees the originals;
// the Reload copies them into fresh buffers, gives those back to the stage
// and the host buffers back to the pool. The slot's lock is held only while
// the stage hands tensors over, not during the copies, so a copy on the copy
// stream (stream threads) overlaps compute on the same chunk. The live count
// drops after the originals are freed and rises when the copies back exist;
// the stream program makes the next forward wait for earlier Offloads and the
// next freeing op for earlier Reloads (StreamLowering), so the measured peak
// is the compiler's program-order count. On CPU "host" is the same memory:
// what moves is the activation's ownership and buffer, as on a GPU.
//
// BPipe's transfers (transfer): an Evict takes the stage's stored tensors
// of (chunk, micro-batch) out (takeStored), as an Offload does, and leaves
// all of them, shapes included, in its message's payload (a multi-tensor
// payload: `carried_`); the owner's live count drops. The partner's Hold
// copies them into buffers of its peer pool, frees the originals and counts
// them in its own live activations (check/Memory.cpp counts a held activation
// on the partner); its Return copies them into fresh buffers for the returned
// message, gives its buffers back and drops them from its count; the owner's
// Load counts them again and hands them back to the stage (putStored). All
// four run on the copy stream, ordered against compute as Offload/Reload are.
//
// Sizes (`sizes`): micro-batch mb has batch.tokensOf(mb) rows, counts
// batch.sizeOf(mb) units of activations, and its loss and loss gradient are
// weighted by batch.lossWeight(mb) (Batch.h).
#pragma once

#include "exec/ActivationPool.h"
#include "exec/Describe.h"
#include "exec/ExpertGroups.h"
#include "exec/RunOptions.h"
#include "exec/StreamEngine.h"

#include "pipert/Batch.h"
#include "pipert/Loss.h"
#include "pipert/Model.h"
#include "pipert/Program.h"
#include "pipert/Trace.h"

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace pipert {

template <typename T>
class OpRunner final : public CommandRunner {
public:
  OpRunner(const Program &program, const RunOptions &options, const ModelSpec &model,
           const BatchSpec &batch, int replica, ExpertGroups<T> *experts)
      : program_(program), options_(options), batch_(batch),
        dataOffset_(replica * program.numMicrobatches), pools_(program.numRanks),
        hostPools_(program.numRanks), peerPools_(program.numRanks),
        payloads_(program.numMessages) {
    constexpr uint32_t kNone = ~0u;
    for (int r = 0; r < program.numRanks; ++r) {
      ranks_.push_back(std::make_unique<RankState>());
      RankState &rank = *ranks_.back();
      const RankTable &table = program.ranks[r];
      rank.incoming.assign(table.numOps, kNone);
      rank.outgoing.assign(table.numOps, kNone);
      rank.ops.reset(new OpState[table.numOps]);
      rank.slotOf.resize(table.numOps);
      rank.losses.assign(table.numOps, 0.0);
      rank.replayOf.assign(table.numOps, kNone);
      rank.lastOutputs.resize(size_t(program.numMicrobatches));
      std::map<std::pair<int, int>, uint32_t> replays; // (chunk, mb) -> its R
      for (uint32_t i = 0; i < table.numOps; ++i)
        if (table.ops[i].kind == OpCode::R)
          replays[{table.ops[i].chunk, table.ops[i].microbatch}] = i;
      if (!replays.empty())
        for (uint32_t i = 0; i < table.numOps; ++i)
          if (table.ops[i].kind == OpCode::F) {
            auto it = replays.find({table.ops[i].chunk, table.ops[i].microbatch});
            if (it != replays.end())
              rank.replayOf[i] = it->second;
          }
      linkOffloads(rank, table);
      for (uint32_t i = 0; i < table.numOps; ++i) {
        const ProgramOp &op = table.ops[i];
        if (onPartner(op.kind))
          continue; // Hold, Return: the owner's chunk; no stage here (slotOf stays null)
        auto &slot = rank.slots[op.chunk];
        if (!slot) { // same seed and stage index: copies start identical
          slot = std::make_unique<Slot>();
          slot->stage = makeStage<T>(model, op.stage,
                                     experts && !model.provider && model.stages[op.stage].kind == StageKind::Moe
                                         ? experts->endpoint(r, op.chunk, replica)
                                         : nullptr);
        }
        rank.slotOf[i] = slot.get();
      }
    }
    bool transfers = false;
    for (uint32_t id = 0; id < program.numMessages; ++id) {
      const ProgramMessage &m = program.messages[id];
      ranks_[m.from]->outgoing[m.producerOp] = id;
      ranks_[m.to]->incoming[m.consumerOp] = id;
      transfers |= m.gradient >= kEvictedMessage;
    }
    if (transfers) {
      carried_.resize(program.numMessages);
      for (int r = 0; r < program.numRanks; ++r)
        linkHolds(r);
    }
  }

  // Before a step: gradients zeroed, per-step state reset, the clock started.
  void beginStep() {
    for (auto &rank : ranks_) {
      for (auto &[chunk, slot] : rank->slots)
        slot->stage->zeroGradients();
      uint32_t n = uint32_t(rank->losses.size());
      for (uint32_t i = 0; i < n; ++i) {
        rank->ops[i].partsDone = 0;
        rank->ops[i].started.store(false, std::memory_order_relaxed);
      }
      std::fill(rank->losses.begin(), rank->losses.end(), 0.0);
      rank->live.store(0);
      rank->peak.store(0);
    }
    start_ = std::chrono::steady_clock::now();
  }

  void run(int r, uint32_t i, RunPart part) override {
    const ProgramOp &op = program_.ranks[r].ops[i];
    if (isMemoryOp(op.kind))
      return isTransfer(op.kind) ? transfer(r, i) : moveStored(r, i);
    RankState &rank = *ranks_[r];
    OpState &state = rank.ops[i];
    Slot &slot = *rank.slotOf[i];
    std::lock_guard<std::mutex> lock(slot.mutex);
    int parts = part == RunPart::Whole ? 4 : 1;
    // Whole, or a pair's half running its sub-operations in its chain's order.
    bool inOrder = part == RunPart::Whole
                       ? state.partsDone == 0
                       : op.kind != OpCode::W &&
                             (op.kind == OpCode::F ? forwardPosition(subOpOf(part))
                                                   : backwardPosition(subOpOf(part))) ==
                                 state.partsDone;
    if (!inOrder)
      throw std::logic_error("a command runs a part of " + describeOp(program_, r, i) +
                             " out of its order");
    Stage<T> &stage = *slot.stage;
    // This op changes only op.microbatch's stored state: weighted by its size.
    int64_t units = batch_.sizeOf(dataOffset_ + op.microbatch);
    int64_t before = int64_t(stage.storedMicroBatches());
    if (state.partsDone == 0)
      startOp(r, i);
    if (!options_.empty)
      work(op, stage, state, part);
    int64_t delta = (int64_t(stage.storedMicroBatches()) - before) * units;
    int64_t live = rank.live.fetch_add(delta) + delta;
    raise(rank.peak, live);
    state.partsDone += parts;
    if (state.partsDone >= 4 && rank.replayOf[i] != ~0u && !options_.empty) {
      // A recomputed forward: what it stored goes now; its R stores it again.
      int64_t stored = int64_t(stage.storedMicroBatches());
      stage.discard(op.microbatch);
      rank.live.fetch_add((int64_t(stage.storedMicroBatches()) - stored) * units);
    }
    if (state.partsDone >= 4)
      finishOp(r, i);
  }

  // After a step: the loss (each rank's in op order, ranks in order), the
  // measured peaks and the ops' times.
  double loss() const {
    double sum = 0;
    for (auto &rank : ranks_)
      for (double l : rank->losses)
        sum += l;
    return sum;
  }
  std::vector<int64_t> peakActivations() const {
    std::vector<int64_t> peaks;
    for (auto &rank : ranks_)
      peaks.push_back(rank->peak.load());
    return peaks;
  }
  // Ops of a step cut short (a failed run): those that started, an unfinished
  // one up to now.
  std::vector<OpTiming> timings() const {
    std::vector<OpTiming> out;
    double now = micros();
    for (size_t r = 0; r < ranks_.size(); ++r)
      for (uint32_t i = 0; i < ranks_[r]->losses.size(); ++i) {
        const OpState &op = ranks_[r]->ops[i];
        if (op.started.load())
          out.push_back({int(r), i, op.start, op.partsDone >= 4 ? op.end : now});
      }
    return out;
  }

  PoolStats poolStats() const { return pools_.stats(); }
  // The host buffers that Offload copies into (all zero without Offload).
  PoolStats hostPoolStats() const { return hostPools_.stats(); }
  // The buffers a partner holds evicted activations in (all zero without Hold).
  PoolStats peerPoolStats() const { return peerPools_.stats(); }
  void setDataStep(int64_t step) { batch_.step = step; }

  // Stage objects by rank, then chunk.
  std::vector<Stage<T> *> stageCopies() {
    std::vector<Stage<T> *> copies;
    for (auto &rank : ranks_)
      for (auto &[chunk, slot] : rank->slots)
        copies.push_back(slot->stage.get());
    return copies;
  }
  Stage<T> &stage(int rank, int chunk) { return *ranks_[rank]->slots.at(chunk)->stage; }

private:
  struct Slot {
    std::unique_ptr<Stage<T>> stage;
    std::mutex mutex;
  };
  struct OpState {
    Tensor<T> input, output;        // F: activation in/out; B, I: gradient in/out
    std::vector<Tensor<T>> host;    // Reload: the host copies its Offload made; Return: what
                                    // its Hold keeps
    int partsDone = 0;
    std::atomic<bool> started{false}; // read by the pair's other half
    double start = 0, end = 0;        // microseconds from the step's start
  };
  struct RankState {
    std::map<int, std::unique_ptr<Slot>> slots; // by chunk
    std::vector<Slot *> slotOf;                  // per op
    std::vector<uint32_t> replayOf;              // per F: the R that replays it, or ~0
    std::vector<uint32_t> reloadOf;              // per Offload: its Reload (empty: no Offload)
    std::vector<uint32_t> returnOf;              // per Hold: its Return (empty: no Hold)
    std::unique_ptr<OpState[]> ops;
    std::vector<uint32_t> incoming, outgoing;    // per op: message id or ~0
    std::mutex localMutex;
    std::map<std::tuple<int, int, int>, Tensor<T>> local; // (gradient?, stage, mb) same-rank hand-offs
    std::vector<Tensor<T>> lastOutputs;                  // last stage: output per micro-batch
    std::vector<double> losses;                          // per op: the loss its backward computed
    std::atomic<int64_t> live{0}, peak{0};
  };

  static void raise(std::atomic<int64_t> &peak, int64_t value) {
    int64_t seen = peak.load(std::memory_order_relaxed);
    while (value > seen && !peak.compare_exchange_weak(seen, value)) {
    }
  }

  double micros() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start_)
        .count();
  }

  // Each Offload's Reload (validated: one per (chunk, micro-batch), later).
  static void linkOffloads(RankState &rank, const RankTable &table) {
    std::map<std::pair<int, int>, uint32_t> reloads; // (chunk, mb) -> its Reload
    for (uint32_t i = 0; i < table.numOps; ++i)
      if (table.ops[i].kind == OpCode::Reload)
        reloads[{table.ops[i].chunk, table.ops[i].microbatch}] = i;
    if (reloads.empty())
      return;
    rank.reloadOf.assign(table.numOps, ~0u);
    for (uint32_t i = 0; i < table.numOps; ++i)
      if (table.ops[i].kind == OpCode::Offload)
        rank.reloadOf[i] = reloads.at({table.ops[i].chunk, table.ops[i].microbatch});
  }

  // Each Hold's Return on partner r: the one of the same owner (its
  // message's other end), chunk and micro-batch (validated: one, later).
  void linkHolds(int r) {
    RankState &rank = *ranks_[r];
    const RankTable &table = program_.ranks[r];
    std::map<std::tuple<int, int, int>, uint32_t> returns; // (owner, chunk, mb) -> its Return
    for (uint32_t i = 0; i < table.numOps; ++i)
      if (table.ops[i].kind == OpCode::Return)
        returns[{program_.messages[rank.outgoing[i]].to, table.ops[i].chunk,
                 table.ops[i].microbatch}] = i;
    if (returns.empty())
      return;
    rank.returnOf.assign(table.numOps, ~0u);
    for (uint32_t i = 0; i < table.numOps; ++i)
      if (table.ops[i].kind == OpCode::Hold)
        rank.returnOf[i] = returns.at({program_.messages[rank.incoming[i]].from,
                                       table.ops[i].chunk, table.ops[i].microbatch});
  }

  // Copies of `tensors` into buffers of `pool` (each into a fresh buffer when
  // `pool` is null); an empty tensor keeps its shape (an expert that got no
  // rows is 0 x h).
  static std::vector<Tensor<T>> copies(const std::vector<Tensor<T>> &tensors, RankPools<T> *pools,
                                       int r) {
    std::vector<Tensor<T>> out;
    out.reserve(tensors.size());
    for (const Tensor<T> &t : tensors) {
      if (t.empty() || !pools) {
        out.push_back(t.empty() ? Tensor<T>(t.rows(), t.cols()) : Tensor<T>(t));
        continue;
      }
      out.push_back((*pools)[r].acquire(t.rows(), t.cols()));
      std::copy(t.data(), t.data() + t.size(), out.back().data());
    }
    return out;
  }

  // Runs op i of rank r, a memory op, whole: refuses a second run and times
  // it; `move` does the work unless --model empty (the stages store nothing).
  template <typename Move> void runWhole(int r, uint32_t i, Move move) {
    OpState &state = ranks_[r]->ops[i];
    if (state.partsDone != 0)
      throw std::logic_error("a command runs " + describeOp(program_, r, i) + " again");
    state.started.store(true);
    state.start = micros();
    if (!options_.empty) {
      const ProgramOp &op = program_.ranks[r].ops[i];
      move(*ranks_[r], op, state, batch_.sizeOf(dataOffset_ + op.microbatch));
    }
    state.partsDone = 4;
    state.end = micros();
  }

  // The stored tensors of op i's micro-batch, taken out of its stage.
  std::vector<Tensor<T>> takeStored(RankState &rank, uint32_t i, const ProgramOp &op) {
    Slot &slot = *rank.slotOf[i];
    std::lock_guard<std::mutex> lock(slot.mutex);
    return slot.stage->takeStored(op.microbatch);
  }

  // Hands `tensors` back to op i's stage for its micro-batch.
  void putStored(RankState &rank, uint32_t i, const ProgramOp &op, std::vector<Tensor<T>> tensors) {
    Slot &slot = *rank.slotOf[i];
    std::lock_guard<std::mutex> lock(slot.mutex);
    slot.stage->putStored(op.microbatch, std::move(tensors));
  }

  // An Evict, Hold, Return or Load, whole (see the header comment).
  void transfer(int r, uint32_t i) {
    runWhole(r, i, [&](RankState &rank, const ProgramOp &op, OpState &state, int64_t units) {
      switch (op.kind) {
      case OpCode::Evict: // the owner's buffers go with the message
        carried_[rank.outgoing[i]] = takeStored(rank, i, op);
        rank.live.fetch_sub(units);
        break;
      case OpCode::Hold: {
        std::vector<Tensor<T>> arrived = std::move(carried_[rank.incoming[i]]);
        rank.ops[rank.returnOf[i]].host = copies(arrived, &peerPools_, r);
        arrived.clear(); // the sender's buffers go
        raise(rank.peak, rank.live.fetch_add(units) + units);
        break;
      }
      case OpCode::Return: {
        std::vector<Tensor<T>> &held = state.host;
        carried_[rank.outgoing[i]] = copies(held, nullptr, r);
        for (Tensor<T> &h : held)
          if (!h.empty())
            peerPools_[r].release(std::move(h));
        held.clear();
        rank.live.fetch_sub(units);
        break;
      }
      case OpCode::Load:
        raise(rank.peak, rank.live.fetch_add(units) + units);
        putStored(rank, i, op, std::move(carried_[rank.incoming[i]]));
        break;
      default:
        throw std::logic_error(describeOp(program_, r, i) + " is not a transfer");
      }
    });
  }

  // An Offload or a Reload, whole (see the header comment).
  void moveStored(int r, uint32_t i) {
    runWhole(r, i, [&](RankState &rank, const ProgramOp &op, OpState &state, int64_t units) {
      if (op.kind == OpCode::Offload) {
        std::vector<Tensor<T>> device = takeStored(rank, i, op);
        // Empty tensors keep their shape (an expert that got no rows is 0 x h).
        rank.ops[rank.reloadOf[i]].host = copies(device, &hostPools_, r);
        device.clear(); // the device's copies go
        rank.live.fetch_sub(units);
      } else {
        std::vector<Tensor<T>> device;
        device.reserve(state.host.size());
        for (Tensor<T> &h : state.host) {
          device.push_back(h); // a fresh buffer, copied
          hostPools_[r].release(std::move(h));
        }
        state.host.clear();
        raise(rank.peak, rank.live.fetch_add(units) + units);
        putStored(rank, i, op, std::move(device));
      }
    });
  }

  // The pair this op belongs to, if any: its other half.
  uint32_t partnerOf(int r, uint32_t i) const {
    const RankTable &table = program_.ranks[r];
    if (table.ops[i].pairedWithNext && i + 1 < table.numOps)
      return i + 1;
    if (i > 0 && table.ops[i - 1].pairedWithNext)
      return i - 1;
    return ~0u;
  }

  Tensor<T> take(int r, uint32_t i, bool gradient, int producerStage, int mb) {
    RankState &rank = *ranks_[r];
    uint32_t id = rank.incoming[i];
    if (id != ~0u) {
      if (payloads_[id].empty())
        throw std::logic_error(describeOp(program_, r, i) + " runs before " +
                               describeMessage(program_, id) + " arrived");
      return std::move(payloads_[id]);
    }
    std::lock_guard<std::mutex> lock(rank.localMutex);
    auto it = rank.local.find({gradient, producerStage, mb});
    if (it == rank.local.end())
      throw std::logic_error("no local input for " + describeOp(program_, r, i));
    Tensor<T> value = std::move(it->second);
    rank.local.erase(it);
    return value;
  }

  void deliver(int r, uint32_t i, bool gradient, int stage, int mb, Tensor<T> value) {
    RankState &rank = *ranks_[r];
    uint32_t id = rank.outgoing[i];
    if (id != ~0u) {
      payloads_[id] = std::move(value);
      return;
    }
    std::lock_guard<std::mutex> lock(rank.localMutex);
    rank.local[{gradient, stage, mb}] = std::move(value);
  }

  // The first part: inputs, output buffer, the peak before a forward stores.
  void startOp(int r, uint32_t i) {
    RankState &rank = *ranks_[r];
    const ProgramOp &op = program_.ranks[r].ops[i];
    OpState &state = rank.ops[i];
    state.started.store(true);
    state.start = micros();
    // A forward stores its activations when it starts: count them before the
    // pair's backward can free its own (the compiler counts the same way).
    int64_t forwards =
        op.kind == OpCode::F || op.kind == OpCode::R ? batch_.sizeOf(dataOffset_ + op.microbatch) : 0;
    uint32_t partner = partnerOf(r, i);
    if (partner != ~0u && program_.ranks[r].ops[partner].kind == OpCode::F &&
        !rank.ops[partner].started.load())
      forwards += batch_.sizeOf(dataOffset_ + program_.ranks[r].ops[partner].microbatch);
    raise(rank.peak, rank.live.load() + forwards);
    int last = program_.numStages - 1;
    size_t rows = size_t(batch_.tokensOf(dataOffset_ + op.microbatch)), cols = size_t(batch_.hidden);
    bool empty = options_.empty;
    switch (op.kind) {
    case OpCode::F:
      if (op.stage > 0)
        state.input = take(r, i, false, op.stage - 1, op.microbatch);
      else if (!empty)
        state.input = pools_[r].adopt(microBatchInput<T>(batch_, dataOffset_ + op.microbatch));
      state.output = empty ? Tensor<T>(1, 1) : pools_[r].acquire(rows, cols);
      break;
    case OpCode::B:
    case OpCode::I:
      if (op.stage < last)
        state.input = take(r, i, true, op.stage + 1, op.microbatch);
      else if (!empty)
        state.input = lossGradient(r, i, op);
      state.output = empty ? Tensor<T>(1, 1) : pools_[r].acquire(rows, cols);
      break;
    case OpCode::R: // its input was left here by the forward it replays
      if (!empty && state.input.empty())
        throw std::logic_error(describeOp(program_, r, i) + " runs before its forward");
      state.output = empty ? Tensor<T>(1, 1) : pools_[r].acquire(rows, cols);
      break;
    default: // W; the memory ops run in moveStored and transfer
      break;
    }
  }

  // The last stage's backward starts from the loss of its forward's output.
  Tensor<T> lossGradient(int r, uint32_t i, const ProgramOp &op) {
    RankState &rank = *ranks_[r];
    Tensor<T> output = std::move(rank.lastOutputs[size_t(op.microbatch)]);
    if (output.empty())
      throw std::logic_error("backward of micro-batch " + std::to_string(op.microbatch) +
                             " before its forward's output");
    Tensor<T> target = microBatchTarget<T>(batch_, dataOffset_ + op.microbatch);
    Tensor<T> gradOutput = pools_[r].acquire(output.rows(), output.cols());
    rank.losses[i] = lossAndGrad(batch_.loss, output, target, gradOutput);
    if (batch_.sizes) { // this micro-batch's share of the batch's tokens (Batch.h)
      double weight = batch_.lossWeight(dataOffset_ + op.microbatch);
      rank.losses[i] *= weight;
      for (size_t e = 0; e < gradOutput.size(); ++e)
        gradOutput[e] = T(double(gradOutput[e]) * weight);
    }
    pools_[r].release(std::move(output));
    return gradOutput;
  }

  void work(const ProgramOp &op, Stage<T> &stage, OpState &state, RunPart part) {
    int mb = op.microbatch;
    bool whole = part == RunPart::Whole;
    switch (op.kind) {
    case OpCode::F:
      if (whole)
        stage.forward(mb, state.input, state.output);
      else
        stage.forwardPart(mb, subOpOf(part), state.input, state.output);
      break;
    case OpCode::B:
    case OpCode::I:
      if (whole && op.kind == OpCode::B)
        stage.backward(mb, state.input, state.output);
      else if (whole)
        stage.backwardInput(mb, state.input, state.output);
      else
        stage.backwardPart(mb, subOpOf(part), state.input, state.output,
                           op.kind == OpCode::I ? WeightGrad::Deferred : WeightGrad::Now);
      break;
    case OpCode::W:
      stage.backwardWeight(mb);
      break;
    case OpCode::R: // never half of a pair (validated)
      stage.forward(mb, state.input, state.output);
      break;
    default: // the memory ops run in moveStored and transfer
      break;
    }
  }

  // The last part: the output handed on, the input's buffer back to the pool.
  void finishOp(int r, uint32_t i) {
    RankState &rank = *ranks_[r];
    const ProgramOp &op = program_.ranks[r].ops[i];
    OpState &state = rank.ops[i];
    int last = program_.numStages - 1;
    if (rank.replayOf[i] != ~0u) // a recomputed forward's input waits for its R
      rank.ops[rank.replayOf[i]].input = std::move(state.input);
    else if (!options_.empty) // --model empty: 1x1 stand-ins, not the pool's
      pools_[r].release(std::move(state.input)); // the stage keeps what its backward needs
    if (op.kind == OpCode::R) {
      if (!options_.empty) // the forward's output went on at the F
        pools_[r].release(std::move(state.output));
    } else if (op.kind == OpCode::F) {
      if (op.stage == last)
        rank.lastOutputs[size_t(op.microbatch)] = std::move(state.output);
      else
        deliver(r, i, false, op.stage, op.microbatch, std::move(state.output));
    } else if (op.kind != OpCode::W) {
      if (op.stage > 0)
        deliver(r, i, true, op.stage, op.microbatch, std::move(state.output));
      else if (!options_.empty)
        pools_[r].release(std::move(state.output));
    }
    state.input = Tensor<T>();
    state.output = Tensor<T>();
    state.end = micros();
  }

  const Program &program_;
  const RunOptions &options_;
  BatchSpec batch_;
  int dataOffset_; // this replica's first micro-batch in `batch_`
  RankPools<T> pools_; // the buffers that flow between stages, one pool per rank
  RankPools<T> hostPools_; // the host copies of offloaded activations, one pool per rank
  RankPools<T> peerPools_; // the activations a partner holds for its owner (Hold), one per rank
  std::vector<std::unique_ptr<RankState>> ranks_;
  std::vector<Tensor<T>> payloads_; // per message: from its producer's last part to its consumer's first
  // Per message, only with transfers: an evicted or returned activation's
  // tensors, from the Evict (Return) to the Hold (Load).
  std::vector<std::vector<Tensor<T>>> carried_;
  std::chrono::steady_clock::time_point start_;
};

} // namespace pipert
