// Runs one training step of an emitted program with the structure of the CUDA
// backend, streams being threads:
//  - each rank's compute stream runs its ops in the order the compiler proved;
//    the two halves of an overlap pair run at once on two threads (when they use
//    different chunks: two ops of one chunk share its state and run in turn);
//  - each rank has a send stream per outgoing channel and a receive stream per
//    incoming channel (Channel.h: rendezvous, NCCL's matching order). A send is
//    handed to its stream when its op ends; each receive records an Event the
//    consuming op waits on. So communication runs under compute, and a send
//    never blocks compute.
// Afterwards, replicated stages sum their gradients over their sync group, and
// the live activations each rank held are compared with the compiler's count.
#pragma once

#include "exec/ActivationPool.h"
#include "exec/Channel.h"
#include "exec/Event.h"
#include "exec/RunOptions.h"
#include "exec/Watchdog.h"

#include "pipert/Batch.h"
#include "pipert/Gradients.h"
#include "pipert/Loss.h"
#include "pipert/Model.h"
#include "pipert/Program.h"
#include "pipert/ThreadedAllToAll.h"
#include "pipert/Trace.h"

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

namespace pipert {

struct StepResult {
  double loss = 0;
  double milliseconds = 0;
  std::vector<int64_t> peakActivations; // measured, per rank
  std::vector<OpTiming> timings;
};

// The expert-parallel groups shared by the replicas of a pipeline: one group per
// (rank, chunk) slot, whose members are that slot's stage in every replica.
template <typename T>
class ExpertGroups {
public:
  ExpertGroups(int size, double timeoutSeconds) : size_(size), timeout_(timeoutSeconds) {}
  std::shared_ptr<AllToAll<T>> endpoint(int rank, int chunk, int replica) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto &group = groups_[{rank, chunk}];
    if (!group)
      group = std::make_unique<ThreadedAllToAllGroup<T>>(size_, timeout_);
    return group->endpoint(replica);
  }

private:
  int size_;
  double timeout_;
  std::mutex mutex_;
  std::map<std::pair<int, int>, std::unique_ptr<ThreadedAllToAllGroup<T>>> groups_;
};

template <typename T>
class PipelineRun {
public:
  // Replica `replica` of `replicas` runs micro-batches replica*M .. replica*M+M-1
  // of `batch`; with expert groups, its MoE stages join them.
  PipelineRun(const Program &program, const RunOptions &options, const ModelSpec &model,
              const BatchSpec &batch, int replica = 0, ExpertGroups<T> *experts = nullptr)
      : program_(program), options_(options), batch_(batch), watchdog_(options.timeoutSeconds),
        dataOffset_(replica * program.numMicrobatches) {
    constexpr uint32_t kNone = ~0u;
    for (int r = 0; r < program.numRanks; ++r)
      ranks_.push_back(std::make_unique<RankState>());
    for (int r = 0; r < program.numRanks; ++r) {
      RankState &rank = *ranks_[r];
      const RankTable &table = program.ranks[r];
      rank.incoming.assign(table.numOps, kNone);
      rank.outgoing.assign(table.numOps, kNone);
      for (uint32_t i = 0; i < table.numOps; ++i) {
        const ProgramOp &op = table.ops[i];
        if (!rank.stages.count(op.chunk)) // same seed and stage index: copies start identical
          rank.stages[op.chunk] = makeStage<T>(
              model, op.stage,
              experts && !model.provider && model.stages[op.stage].kind == StageKind::Moe
                  ? experts->endpoint(r, op.chunk, replica)
                  : nullptr);
      }
    }
    for (uint32_t id = 0; id < program.numMessages; ++id) {
      const ProgramMessage &m = program.messages[id];
      ranks_[m.from]->outgoing[m.producerOp] = id;
      ranks_[m.to]->incoming[m.consumerOp] = id;
      channels_[channelOf(m)]; // create every channel before the threads start
      arrivals_.push_back(std::make_unique<Event<T>>());
    }
    for (int r = 0; r < program.numRanks; ++r)
      for (uint32_t k = 0; k < program.ranks[r].numReceives; ++k) {
        uint32_t id = program.ranks[r].receives[k];
        receiveOrder_[channelOf(program.messages[id])].push_back(id);
      }
  }

  StepResult runStep() {
    for (auto &rank : ranks_)
      for (auto &[chunk, stage] : rank->stages)
        stage->zeroGradients();
    StepResult result;
    result.peakActivations.assign(ranks_.size(), 0);
    start_ = std::chrono::steady_clock::now();
    sendQueues_.clear();
    std::vector<std::thread> streams;
    for (uint32_t id = 0; id < program_.numMessages; ++id)
      sendQueues_[channelOf(program_.messages[id])]; // one send stream per channel
    for (auto &[key, queue] : sendQueues_)
      streams.emplace_back([this, key = key, &queue = queue] { runSendStream(key, queue); });
    for (auto &[key, ids] : receiveOrder_)
      streams.emplace_back([this, key = key, &ids = ids] { runReceiveStream(key, ids); });
    std::vector<std::thread> computes;
    for (int r = 0; r < program_.numRanks; ++r)
      computes.emplace_back([this, r, &result] { runRank(r, result); });
    for (std::thread &t : computes)
      t.join();
    for (auto &[key, queue] : sendQueues_)
      queue.close();
    for (std::thread &t : streams)
      t.join();
    result.milliseconds =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
    syncReplicatedGradients();
    for (auto &rank : ranks_) {
      result.loss += rank->loss;
      result.timings.insert(result.timings.end(), rank->timings.begin(), rank->timings.end());
      rank->timings.clear();
      rank->loss = 0;
    }
    return result;
  }

  PoolStats poolStats() const { return pool_.stats(); }

  // Token data: the step whose micro-batches the next runStep draws.
  void setDataStep(int64_t step) { batch_.step = step; }

  // Every stage object this replica holds (replicated stages: each copy), by
  // rank then chunk: what the optimizer steps and a checkpoint saves.
  std::vector<Stage<T> *> stageCopies() {
    std::vector<Stage<T> *> copies;
    for (auto &rank : ranks_)
      for (auto &[chunk, stage] : rank->stages)
        copies.push_back(stage.get());
    return copies;
  }

  // Gradients per stage, read from the first slot that holds each stage.
  GradientSet<T> gradients() {
    GradientSet<T> set(program_.numStages);
    std::vector<bool> seen(program_.numStages, false);
    for (int r = 0; r < program_.numRanks; ++r)
      for (auto &[chunk, stage] : ranks_[r]->stages)
        if (!seen[stage->stageIndex()]) {
          seen[stage->stageIndex()] = true;
          set[stage->stageIndex()] = snapshotGradients(*stage);
        }
    return set;
  }

private:
  using ChannelKey = uint64_t; // pipert::channelKey: (from, to, gradient?)

  struct RankState {
    std::map<int, std::unique_ptr<Stage<T>>> stages; // by chunk
    std::vector<uint32_t> incoming, outgoing;         // per op: message id or ~0
    std::mutex localMutex;                            // pairs touch these from two threads
    std::map<std::tuple<int, int, int>, Tensor<T>> local; // (gradient?, stage, mb) same-rank handoffs
    std::map<int, Tensor<T>> lastOutputs;             // last stage: output per micro-batch
    double loss = 0;
    std::vector<OpTiming> timings;
  };

  static ChannelKey channelOf(const ProgramMessage &m) { return channelKey(m); }

  // The hand-off from a compute stream to a send stream.
  class SendQueue {
  public:
    void push(uint32_t id, Tensor<T> value) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        tasks_.emplace_back(id, std::move(value));
      }
      changed_.notify_one();
    }
    void close() {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        closed_ = true;
      }
      changed_.notify_one();
    }
    // The next message to send; false once closed and drained.
    bool pop(std::pair<uint32_t, Tensor<T>> &task) {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return !tasks_.empty() || closed_; });
      if (tasks_.empty())
        return false;
      task = std::move(tasks_.front());
      tasks_.pop_front();
      return true;
    }

  private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<std::pair<uint32_t, Tensor<T>>> tasks_;
    bool closed_ = false;
  };

  std::string describe(int rank, uint32_t i) const {
    const ProgramOp &op = program_.ranks[rank].ops[i];
    static const char *kNames[] = {"F", "B", "I", "W"};
    return std::string(kNames[static_cast<int>(op.kind)]) + " of stage " +
           std::to_string(op.stage) + ", micro-batch " + std::to_string(op.microbatch) +
           " (op " + std::to_string(i) + ")";
  }

  // The input an op needs: from its channel, or from this rank's own earlier op.
  Tensor<T> take(int r, uint32_t i, bool gradient, int producerStage, int mb) {
    RankState &rank = *ranks_[r];
    uint32_t id = rank.incoming[i];
    if (id == ~0u) {
      std::lock_guard<std::mutex> lock(rank.localMutex);
      auto it = rank.local.find({gradient, producerStage, mb});
      if (it == rank.local.end())
        rankFailed(r, "no local input for " + describe(r, i));
      Tensor<T> value = std::move(it->second);
      rank.local.erase(it);
      return value;
    }
    const ProgramMessage &m = program_.messages[id];
    if (auto payload = arrivals_[id]->wait(watchdog_.deadline()))
      return std::move(*payload);
    watchdog_.fire("rank " + std::to_string(r) + " is waiting for " + describeMessage(m) +
                   ", needed by " + describe(r, i));
  }

  std::string describeMessage(const ProgramMessage &m) const {
    return std::string(m.gradient ? "the gradient" : "the activation") + " of stage " +
           std::to_string(m.stage) + ", micro-batch " + std::to_string(m.microbatch) +
           " from rank " + std::to_string(m.from);
  }

  // A send stream: hands each message to its channel, in the order the compute
  // stream produced them, each waiting for its receive (rendezvous).
  void runSendStream(const ChannelKey &key, SendQueue &queue) {
    Channel<T> &channel = channels_.at(key);
    for (;;) {
      std::pair<uint32_t, Tensor<T>> task;
      if (!queue.pop(task))
        return;
      const ProgramMessage &m = program_.messages[task.first];
      if (!channel.send(task.first, std::move(task.second), watchdog_.deadline()))
        watchdog_.fire("rank " + std::to_string(m.from) + "'s send stream is waiting for rank " +
                       std::to_string(m.to) + " to receive " + describeMessage(m));
    }
  }

  // A receive stream: posts the channel's receives in the program's receive
  // order (the sender's order) and records each message's event, which holds
  // the payload until its op takes it: a message that arrives before its
  // consumer runs (the receiving rank consumes in another order) waits there.
  void runReceiveStream(const ChannelKey &key, const std::vector<uint32_t> &ids) {
    Channel<T> &channel = channels_.at(key);
    for (uint32_t id : ids) {
      const ProgramMessage &m = program_.messages[id];
      uint32_t got = id;
      auto payload = channel.receive(id, watchdog_.deadline(), got);
      if (payload) {
        arrivals_[id]->record(std::move(*payload));
        continue;
      }
      if (got != id)
        rankFailed(m.to, "expected " + describeMessage(m) + " (message " + std::to_string(id) +
                             ") but the channel delivered message " + std::to_string(got) +
                             ": sends and receives are out of order");
      watchdog_.fire("rank " + std::to_string(m.to) + " is waiting for " + describeMessage(m) +
                     ", needed by " + describe(m.to, m.consumerOp));
    }
  }

  void deliver(int r, uint32_t i, bool gradient, int stage, int mb, Tensor<T> value) {
    RankState &rank = *ranks_[r];
    uint32_t id = rank.outgoing[i];
    if (id == ~0u) {
      std::lock_guard<std::mutex> lock(rank.localMutex);
      rank.local[{gradient, stage, mb}] = std::move(value);
      return;
    }
    if (static_cast<int64_t>(id) == options_.dropMessage)
      return; // testing: a lost message must trip the watchdog, not hang
    sendQueues_.at(channelOf(program_.messages[id])).push(id, std::move(value));
  }

  // --model empty: the same transport and bookkeeping, a 1x1 tensor, no math.
  void runEmptyOp(int r, uint32_t i) {
    const ProgramOp &op = program_.ranks[r].ops[i];
    bool gradient = op.kind != OpCode::F;
    if (op.kind == OpCode::W)
      return;
    int from = gradient ? op.stage + 1 : op.stage - 1;
    if (from >= 0 && from < program_.numStages)
      take(r, i, gradient, from, op.microbatch);
    int to = gradient ? op.stage - 1 : op.stage + 1;
    if (to >= 0 && to < program_.numStages)
      deliver(r, i, gradient, op.stage, op.microbatch, Tensor<T>(1, 1));
  }

  void runOp(int r, uint32_t i) {
    if (options_.empty)
      return runEmptyOp(r, i);
    RankState &rank = *ranks_[r];
    const ProgramOp &op = program_.ranks[r].ops[i];
    Stage<T> &stage = *rank.stages.at(op.chunk);
    int last = program_.numStages - 1;
    size_t rows = static_cast<size_t>(batch_.tokens), cols = static_cast<size_t>(batch_.hidden);
    switch (op.kind) {
    case OpCode::F: {
      Tensor<T> input =
          op.stage == 0 ? pool_.adopt(microBatchInput<T>(batch_, dataOffset_ + op.microbatch))
                        : take(r, i, false, op.stage - 1, op.microbatch);
      Tensor<T> output = pool_.acquire(rows, cols);
      stage.forward(op.microbatch, input, output);
      pool_.release(std::move(input)); // the stage keeps what its backward needs
      if (op.stage == last) {
        std::lock_guard<std::mutex> lock(rank.localMutex);
        rank.lastOutputs[op.microbatch] = std::move(output);
      } else {
        deliver(r, i, false, op.stage, op.microbatch, std::move(output));
      }
      break;
    }
    case OpCode::B:
    case OpCode::I: {
      Tensor<T> gradOutput;
      if (op.stage == last) {
        Tensor<T> output;
        {
          std::lock_guard<std::mutex> lock(rank.localMutex);
          output = std::move(rank.lastOutputs.at(op.microbatch));
          rank.lastOutputs.erase(op.microbatch);
        }
        Tensor<T> target = microBatchTarget<T>(batch_, dataOffset_ + op.microbatch);
        gradOutput = pool_.acquire(rows, cols);
        double loss = lossAndGrad(batch_.loss, output, target, gradOutput);
        pool_.release(std::move(output));
        std::lock_guard<std::mutex> lock(rank.localMutex);
        rank.loss += loss;
      } else {
        gradOutput = take(r, i, true, op.stage + 1, op.microbatch);
      }
      Tensor<T> gradInput = pool_.acquire(rows, cols);
      if (op.kind == OpCode::B)
        stage.backward(op.microbatch, gradOutput, gradInput);
      else
        stage.backwardInput(op.microbatch, gradOutput, gradInput);
      pool_.release(std::move(gradOutput));
      if (op.stage > 0)
        deliver(r, i, true, op.stage, op.microbatch, std::move(gradInput));
      else
        pool_.release(std::move(gradInput));
      break;
    }
    case OpCode::W:
      stage.backwardWeight(op.microbatch);
      break;
    }
  }

  int64_t liveActivations(RankState &rank) {
    int64_t live = 0;
    for (auto &[chunk, stage] : rank.stages)
      live += static_cast<int64_t>(stage->storedMicroBatches());
    return live;
  }

  double micros() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start_)
        .count();
  }

  void runRank(int r, StepResult &result) {
    RankState &rank = *ranks_[r];
    const RankTable &table = program_.ranks[r];
    int64_t peak = 0;
    try {
      for (uint32_t i = 0; i < table.numOps; ++i) {
        const ProgramOp &op = table.ops[i];
        bool pair = op.pairedWithNext && i + 1 < table.numOps;
        // A forward stores its activations when it starts: count them before the
        // pair's backward can free its own (the compiler counts the same way).
        int64_t forwards = op.kind == OpCode::F || (pair && table.ops[i + 1].kind == OpCode::F);
        peak = std::max(peak, liveActivations(rank) + forwards);
        double start = micros();
        if (pair && op.chunk != table.ops[i + 1].chunk) {
          std::exception_ptr error;
          std::thread forward([&] {
            try {
              runOp(r, i);
            } catch (...) {
              error = std::current_exception();
            }
          });
          runOp(r, i + 1);
          forward.join();
          if (error)
            std::rethrow_exception(error);
        } else {
          runOp(r, i);
          if (pair)
            runOp(r, i + 1);
        }
        double end = micros();
        rank.timings.push_back({r, i, start, end});
        if (pair)
          ++i;
        peak = std::max(peak, liveActivations(rank));
      }
    } catch (const std::exception &e) {
      rankFailed(r, e.what());
    }
    result.peakActivations[r] = peak;
  }

  void syncReplicatedGradients() {
    for (uint32_t g = 0; g < program_.numSyncGroups; ++g) {
      const SyncGroupTable &group = program_.syncGroups[g];
      std::vector<std::vector<Parameter<T>>> copies;
      for (uint32_t k = 0; k < group.size; ++k)
        copies.push_back(ranks_[group.ranks[k]]->stages.at(group.chunks[k])->parameters());
      for (size_t p = 0; p < copies.front().size(); ++p) {
        Tensor<T> sum = *copies.front()[p].grad;
        for (size_t k = 1; k < copies.size(); ++k)
          for (size_t e = 0; e < sum.size(); ++e)
            sum[e] += (*copies[k][p].grad)[e];
        for (auto &copy : copies)
          *copy[p].grad = sum;
      }
    }
  }

  const Program &program_;
  const RunOptions &options_;
  BatchSpec batch_;
  Watchdog watchdog_;
  int dataOffset_; // this replica's first micro-batch in `batch_`
  ActivationPool<T> pool_; // the buffers that flow between stages, shared by the ranks
  std::vector<std::unique_ptr<RankState>> ranks_; // RankState holds a mutex: not movable
  std::map<ChannelKey, Channel<T>> channels_;
  std::map<ChannelKey, std::vector<uint32_t>> receiveOrder_; // per channel, in consumption order
  std::map<ChannelKey, SendQueue> sendQueues_;               // rebuilt every step
  std::vector<std::unique_ptr<Event<T>>> arrivals_;          // per message
  std::chrono::steady_clock::time_point start_;
};

} // namespace pipert
