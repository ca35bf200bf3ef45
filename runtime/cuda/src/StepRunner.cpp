#include "StepRunner.h"

#include "ExecKernels.cuh"
#include "InProcessTransport.h"
#include "NcclWait.h"

#include "pipert/Batch.h"
#include "pipert/cuda/CudaCheck.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>

namespace pipert::cuda {

namespace {

using Clock = std::chrono::steady_clock;

double microsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

const char *modelName(ModelKind kind) {
  return kind == ModelKind::Mlp ? "mlp" : kind == ModelKind::Moe ? "moe" : "empty";
}

// Where a CPU MoE stage sits in its expert group, to build it with that
// participant's shard; it is only copied to the device, never run.
class ShardOnly final : public AllToAll<double> {
public:
  ShardOnly(int rank, int size) : rank_(rank), size_(size) {}
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  std::vector<TokenBlock<double>> exchange(std::vector<TokenBlock<double>>) override {
    throw std::logic_error("the CPU copy of a GPU stage exchanged tokens");
  }

private:
  int rank_, size_;
};

} // namespace

StepRunner::StepRunner(const Program &program, const StreamProgram &streams,
                       const CudaOptions &options, int devices)
    : program_(program), streams_(streams), options_(options),
      nccl_(options.transport == TransportKind::Nccl) {
  if (nccl_) {
    group_ = resolveLaunch(options.launch, processEnvironment());
    // A launcher that binds one GPU to each process (srun --gpus-per-task,
    // CUDA_VISIBLE_DEVICES) leaves it one device: that one is this rank's.
    device_ = devices == 1 ? 0 : group_.localRank;
    if (device_ >= devices)
      throw std::runtime_error("local rank " + std::to_string(group_.localRank) + " (from " +
                               group_.launcher + ") but only " + std::to_string(devices) +
                               " CUDA devices");
    pipelineRank_ = group_.rank % program.numRanks;
    replica_ = group_.rank / program.numRanks;
  }
  PIPERT_CUDA(cudaSetDevice(device_));
  // Keep freed memory in the pool: steps reuse it instead of returning it to
  // the driver. But never let an allocation wait for a free still pending on
  // another stream: the allocating stream would then wait for, say, a send to
  // be received, an edge the deadlock proof never saw (with NCCL, a possible
  // cross-rank hang). Reuse follows the program's own event edges only.
  PIPERT_CUDA(cudaDeviceGetDefaultMemPool(&pool_, device_));
  uint64_t keep = UINT64_MAX;
  PIPERT_CUDA(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep));
  int no = 0;
  PIPERT_CUDA(cudaMemPoolSetAttribute(pool_, cudaMemPoolReuseAllowInternalDependencies, &no));

  shared_.program = &program;
  shared_.streams = &streams;
  shared_.options = &options;
  // Micro-batch mb has sizes[mb] x --seq tokens (the schedule's `sizes`; 1
  // each without), as the CPU program's BatchSpec::tokensOf.
  shared_.rows.tokens = options.seq;
  if (program.microbatchSizes)
    shared_.rows.sizes.assign(program.microbatchSizes, program.microbatchSizes + program.numMicrobatches);
  shared_.hidden = size_t(options.hidden);
  BatchSpec batch = batchSpec();
  for (int mb = 0; mb < program.numMicrobatches; ++mb) {
    shared_.activationBytes.push_back(options.model == ModelKind::Empty
                                          ? sizeof(float)
                                          : size_t(shared_.rows.of(mb)) * shared_.hidden *
                                                dtypeBytes(options.dtype));
    shared_.lossWeights.push_back(batch.lossWeight(replica_ * program.numMicrobatches + mb));
  }
  origin_ = makeStream();
  fork_ = makeEvent();
  done_ = makeEvent();
  stepStart_ = makeEvent(cudaEventDefault); // timed
  if (nccl_) {
    auto nccl = std::make_unique<NcclTransport>(program, group_, options.timeoutSeconds, options.ep);
    ncclTransport_ = nccl.get();
    transport_ = std::move(nccl);
  } else {
    transport_ = std::make_unique<InProcessTransport>(program.numMessages);
  }
  uploadData();
  buildRanks();
  sizeTransfers();
}

// Over NCCL a receive is posted with its byte count, and a transfer message's
// size is that of the sender's stored buffers of (stage, micro-batch), packed:
// measured here once, before any step, by a forward of a probe copy of the
// sender's stage on zeros and its takeStored (the stages' stored sizes depend
// on the shapes, not the data). In-process the transport knows each send.
void StepRunner::sizeTransfers() {
  if (!nccl_ || ranks_.empty())
    return;
  ModelSpec model = modelSpec();
  std::map<int, std::unique_ptr<GpuStage>> probes; // by stage
  std::map<std::pair<int, int>, size_t> sizes;     // by (stage, micro-batch)
  RankExecutor &mine = *ranks_.front();
  const Launch at{mine.computeStream(), mine.computeBlas()};
  for (uint32_t id = 0; id < program_.numMessages; ++id) {
    const ProgramMessage &m = program_.messages[id];
    if (m.to != mine.rank() || (m.gradient != kEvictedMessage && m.gradient != kReturnedMessage))
      continue;
    if (options_.model == ModelKind::Empty) {
      shared_.transferBytes[id] = kLeastTransferBytes;
      continue;
    }
    auto known = sizes.find({m.stage, m.microbatch});
    if (known == sizes.end()) {
      std::unique_ptr<GpuStage> &probe = probes[m.stage];
      if (!probe) {
        std::unique_ptr<Stage<double>> cpu = makeStage<double>(model, m.stage, nullptr);
        probe = makeGpuStage(*cpu, model.stages[size_t(m.stage)], shared_.rows, options_.dtype);
      }
      size_t bytes = shared_.activationBytes.at(size_t(m.microbatch));
      void *input = nullptr, *output = nullptr;
      PIPERT_CUDA(cudaMallocAsync(&input, bytes, at.stream));
      PIPERT_CUDA(cudaMallocAsync(&output, bytes, at.stream));
      PIPERT_CUDA(cudaMemsetAsync(input, 0, bytes, at.stream));
      for (SubOp part : kForwardParts)
        probe->forwardPart(m.microbatch, part, input, output, at);
      std::vector<StoredBuffer> stored = probe->takeStored(m.microbatch, at);
      for (const StoredBuffer &b : stored)
        if (b.data)
          PIPERT_CUDA(cudaFreeAsync(b.data, at.stream));
      PIPERT_CUDA(cudaFreeAsync(input, at.stream));
      PIPERT_CUDA(cudaFreeAsync(output, at.stream));
      known = sizes.emplace(std::make_pair(m.stage, m.microbatch), packedBytes(stored)).first;
    }
    shared_.transferBytes[id] = known->second;
  }
  PIPERT_CUDA(cudaStreamSynchronize(at.stream));
}

// The GPU stages have no attention block.
ModelSpec StepRunner::modelSpec() const {
  return builtinModel(program_.numStages, options_.seed, options_.hidden,
                      options_.model == ModelKind::Moe, /*attention=*/false);
}

// Expert-parallel replica e runs micro-batches e*M .. e*M+M-1 of the global
// batch, as the CPU runtime's replicas do; sizes repeat per replica.
BatchSpec StepRunner::batchSpec() const {
  BatchSpec batch{program_.numMicrobatches * options_.ep, options_.seq, options_.hidden,
                  options_.seed + 1};
  if (program_.microbatchSizes) {
    batch.sizes = program_.microbatchSizes;
    batch.sizesPeriod = program_.numMicrobatches;
    batch.sizesTotal = 0;
    for (int mb = 0; mb < program_.numMicrobatches; ++mb)
      batch.sizesTotal += program_.microbatchSizes[mb];
  }
  return batch;
}

void StepRunner::uploadData() {
  if (options_.model == ModelKind::Empty)
    return;
  BatchSpec batch = batchSpec();
  validateBatch(batch);
  for (int mb = 0; mb < program_.numMicrobatches; ++mb)
    for (auto *list : {&shared_.inputs, &shared_.targets}) {
      size_t bytes = shared_.activationBytes[size_t(mb)];
      int global = replica_ * program_.numMicrobatches + mb;
      Tensor<double> host = list == &shared_.inputs ? microBatchInput<double>(batch, global)
                                                    : microBatchTarget<double>(batch, global);
      data_.push_back(allocateDevice(bytes));
      uploadActivation(std::vector<double>(host.data(), host.data() + host.size()),
                       data_.back(), options_.dtype, origin_);
      list->push_back(data_.back());
    }
  awaitStream(origin_, {}, Deadline(options_.timeoutSeconds), "the upload of the batch", "");
}

void StepRunner::buildRanks() {
  ModelSpec model = modelSpec();
  for (int r = 0; r < program_.numRanks; ++r) {
    if (nccl_ && r != pipelineRank_)
      continue;
    std::map<int, std::unique_ptr<GpuStage>> stages;
    const RankTable &table = program_.ranks[r];
    if (options_.model != ModelKind::Empty)
      for (uint32_t i = 0; i < table.numOps; ++i) {
        const ProgramOp &op = table.ops[i];
        // A Hold or Return names its owner's chunk: the partner keeps the
        // buffers, it runs no stage of them.
        if (stages.count(op.chunk) || onPartner(op.kind))
          continue;
        // Same seed and stage index: every copy starts identical to the
        // reference's (an MoE stage: this replica's shard of its experts).
        std::shared_ptr<ExpertExchange> experts;
        std::shared_ptr<AllToAll<double>> shard;
        if (options_.ep > 1 && model.stages[size_t(op.stage)].kind == StageKind::Moe) {
          experts = ncclTransport_->expertExchange(op.chunk);
          shard = std::make_shared<ShardOnly>(experts->rank(), experts->size());
        }
        std::unique_ptr<Stage<double>> cpu = makeStage<double>(model, op.stage, shard);
        stages[op.chunk] = makeGpuStage(*cpu, model.stages[size_t(op.stage)], shared_.rows,
                                        options_.dtype, experts);
      }
    ranks_.push_back(std::make_unique<RankExecutor>(r, shared_, *transport_, std::move(stages)));
  }
  PIPERT_CUDA(cudaDeviceSynchronize());
}

int64_t StepRunner::totalOps() const {
  int64_t ops = 0;
  for (const auto &rank : ranks_)
    ops += program_.ranks[rank->rank()].numOps;
  return ops;
}

// Enqueues one whole step on every stream of this process, forked from and
// joined into the origin stream (so it can be captured as one graph).
void StepRunner::enqueueStep(bool timing, bool measure) {
  transport_->beginStep();
  PIPERT_CUDA(cudaEventRecord(fork_, origin_));
  if (timing)
    PIPERT_CUDA(cudaEventRecord(stepStart_, origin_));
  for (auto &rank : ranks_) {
    rank->forkFrom(fork_);
    rank->beginStep(timing, measure);
  }
  // Round robin: a rank stops only at a receive whose send is not enqueued
  // yet; a proved schedule always lets some rank go on.
  for (;;) {
    bool allDone = true, progressed = false;
    for (auto &rank : ranks_) {
      if (rank->done())
        continue;
      uint32_t before = rank->commandsEnqueued();
      bool finished = rank->advance();
      progressed |= finished || rank->commandsEnqueued() != before;
      allDone &= finished;
    }
    if (allDone)
      break;
    if (!progressed) {
      std::string where;
      for (auto &rank : ranks_)
        if (!rank->done())
          where += "\n  " + rank->position();
      throw std::runtime_error("the stream programs stalled while enqueuing (they were not "
                               "produced by this pipec, or were edited):" + where);
    }
  }
  for (auto &rank : ranks_) {
    rank->joinInto(origin_);
    for (auto &[chunk, stage] : rank->stages()) // the host bookkeeping is complete here
      if (size_t left = stage->storedMicroBatches())
        throw std::runtime_error("rank " + std::to_string(rank->rank()) + " ends the step with " +
                                 std::to_string(left) + " micro-batches of stage " +
                                 std::to_string(stage->stageIndex()) +
                                 " still stored: their backward never ran");
  }
  syncGradients();
}

// Replicated stages sum their gradients over their copies, through the
// transport (which knows where the other copies are).
void StepRunner::syncGradients() {
  std::vector<LocalSyncGroup> groups;
  for (uint32_t g = 0; g < program_.numSyncGroups && options_.model != ModelKind::Empty; ++g) {
    const SyncGroupTable &group = program_.syncGroups[g];
    LocalSyncGroup local;
    local.group = g;
    for (uint32_t k = 0; k < group.size; ++k)
      for (auto &rank : ranks_)
        if (rank->rank() == group.ranks[k])
          local.copies.push_back(rank->stages().at(group.chunks[k])->gradients());
    if (!local.copies.empty())
      groups.push_back(std::move(local));
  }
  transport_->syncGradients(groups, ranks_[0]->deviceLoss(), origin_);
  if (options_.ep > 1 && options_.model != ModelKind::Empty) {
    std::map<int, std::vector<DeviceGradient>> byChunk;
    for (auto &rank : ranks_)
      for (auto &[chunk, stage] : rank->stages())
        byChunk[chunk] = stage->gradients();
    transport_->syncReplicas(byChunk, origin_);
  }
}

// Waits for the origin stream, polling for asynchronous errors; after
// --timeout without completion, aborts the communicators and gives up.
void StepRunner::waitForStep(const char *what) {
  PIPERT_CUDA(cudaEventRecord(done_, origin_));
  Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(options_.timeoutSeconds));
  for (int spins = 0;; ++spins) {
    cudaError_t state = cudaEventQuery(done_);
    if (state == cudaSuccess)
      return;
    if (state != cudaErrorNotReady)
      throwCudaError("cudaEventQuery(step done)", state, __FILE__, __LINE__);
    transport_->poll();
    if (Clock::now() > deadline) {
      transport_->abort();
      throw TimeoutError(
          std::string(what) + " did not finish within " +
          std::to_string(options_.timeoutSeconds) + " s (--timeout bounds a whole step). " +
          (nccl_ ? "The NCCL communicators were aborted: a peer process may have died or be "
                   "running a different program, or a large step needs a longer --timeout."
                 : "Nothing was aborted (in-process transport); a large step may need a "
                   "longer --timeout."));
    }
    if (spins > 1000) // spin briefly, then yield: short steps stay short
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

StepRunner::StepTimes StepRunner::eagerStep(bool timing) {
  StepTimes times;
  Clock::time_point start = Clock::now();
  enqueueStep(timing);
  times.hostMicros = microsSince(start);
  waitForStep("the step");
  times.totalMicros = microsSince(start);
  return times;
}

StepRunner::StepTimes StepRunner::graphStep() {
  if (!graph_) {
    // A graph has its own memory: hand the eager steps' pooled memory back
    // first, or a step that fits eagerly may not fit twice.
    PIPERT_CUDA(cudaDeviceSynchronize());
    PIPERT_CUDA(cudaMemPoolTrimTo(pool_, 0));
    cudaGraph_t graph;
    PIPERT_CUDA(cudaStreamBeginCapture(origin_, cudaStreamCaptureModeThreadLocal));
    try {
      enqueueStep(false, false);
    } catch (...) {
      cudaStreamEndCapture(origin_, &graph); // leave the stream usable for the error path
      throw;
    }
    PIPERT_CUDA(cudaStreamEndCapture(origin_, &graph));
    // Every allocation of a step is freed within it; the flag only guards a
    // relaunch against one that is not.
    cudaGraphExec_t exec = nullptr;
    PIPERT_CUDA(cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch));
    graph_ = UniqueGraphExec(exec);
    PIPERT_CUDA(cudaGraphDestroy(graph));
  }
  StepTimes times;
  Clock::time_point start = Clock::now();
  PIPERT_CUDA(cudaGraphLaunch(graph_, origin_));
  times.hostMicros = microsSince(start);
  waitForStep("the graph replay");
  times.totalMicros = microsSince(start);
  return times;
}

// " (rank 3)", or with expert parallelism where rank 3 sits; "" in-process.
std::string StepRunner::whichRank() const {
  if (!nccl_)
    return "";
  std::string text = " (rank " + std::to_string(group_.rank);
  if (options_.ep > 1)
    text += ": pipeline rank " + std::to_string(pipelineRank_) + " of expert-parallel replica " +
            std::to_string(replica_) + " of " + std::to_string(options_.ep);
  return text + ")";
}

int StepRunner::run() {
  cudaDeviceProp properties;
  PIPERT_CUDA(cudaGetDeviceProperties(&properties, device_));
  std::printf("pipert-cuda: schedule %s (%s): %d ranks, %d stages, %d micro-batches; model %s, "
              "%s, hidden %d, %d tokens per micro-batch; transport %s%s; %s%s\n",
              program_.name, program_.parameters, program_.numRanks, program_.numStages,
              program_.numMicrobatches, modelName(options_.model), dtypeName(options_.dtype),
              options_.hidden, options_.seq, transport_->name(),
              whichRank().c_str(),
              properties.name, options_.serialPairs ? "; overlap pairs serial" : "");
  if (!shared_.rows.sizes.empty()) { // the tokens above are a unit's
    std::printf("micro-batch sizes (x %d tokens):", options_.seq);
    for (int size : shared_.rows.sizes)
      std::printf(" %d", size);
    std::printf("\n");
  }
  int64_t ops = totalOps();
  bool timing = !options_.tracePath.empty();
  // Eager steps (all of them without --cuda-graphs; the first one with it).
  int eagerSteps = options_.graphs ? 1 : options_.steps;
  StepTimes last;
  double eagerLoss = 0;
  eagerPeaks_.assign(ranks_.size(), 0);
  for (int step = 1; step <= eagerSteps; ++step) {
    last = eagerStep(timing);
    for (size_t r = 0; r < ranks_.size(); ++r)
      eagerPeaks_[r] = std::max(eagerPeaks_[r], ranks_[r]->peakActivations());
    eagerLoss = loss();
    std::printf("step %d (eager): loss %.9g, %.3f ms; host enqueue %.2f us per op\n", step,
                eagerLoss, last.totalMicros / 1000, last.hostMicros / double(std::max<int64_t>(ops, 1)));
  }
  // With NCCL each process holds one rank: each writes its own file.
  std::string tracePath = nccl_ ? options_.tracePath + ".rank" + std::to_string(group_.rank)
                                : options_.tracePath;
  if (timing && !writeTrace(tracePath, program_, timings()))
    return 2;
  peaksMatch_ = reportActivations();
  GradientSet<double> eagerGradients = gradients();
  if (options_.ep > 1)
    printGradientSquares();
  std::printf("eager: %.3f ms per step, %.2f us per op\n", last.totalMicros / 1000,
              last.totalMicros / double(std::max<int64_t>(ops, 1)));

  double finalLoss = eagerLoss;
  GradientSet<double> finalGradients = eagerGradients;
  if (options_.graphs) {
    int replays = std::max(options_.steps - 1, 1);
    for (int step = 1; step <= replays; ++step) {
      last = graphStep();
      finalLoss = loss();
      std::printf("step %d (graph): loss %.9g, %.3f ms; launch %.2f us\n", step + 1, finalLoss,
                  last.totalMicros / 1000, last.hostMicros);
    }
    std::printf("graph: %.3f ms per step, %.2f us per op\n", last.totalMicros / 1000,
                last.totalMicros / double(std::max<int64_t>(ops, 1)));
    finalGradients = gradients();
    bool identical = finalLoss == eagerLoss;
    for (size_t s = 0; s < finalGradients.size(); ++s)
      for (size_t p = 0; p < finalGradients[s].size(); ++p)
        identical &= finalGradients[s][p].value.size() == eagerGradients[s][p].value.size() &&
                     std::memcmp(finalGradients[s][p].value.data(),
                                 eagerGradients[s][p].value.data(),
                                 finalGradients[s][p].value.size() * sizeof(double)) == 0;
    std::printf("graph replay vs eager step: %s\n", identical ? "identical" : "DIFFERENT");
    if (!identical)
      return 1;
  }
  if (!options_.check)
    return 0;
  return check(finalLoss, finalGradients);
}

} // namespace pipert::cuda
