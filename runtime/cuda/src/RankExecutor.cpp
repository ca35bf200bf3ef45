#include "RankExecutor.h"

#include "ExecKernels.cuh"

#include "pipert/cuda/CudaCheck.h"

#include <algorithm>

namespace pipert::cuda {

namespace {

constexpr uint32_t kNone = ~0u;
constexpr size_t kBlasWorkspaceBytes = 32u << 20; // cuBLAS must not allocate during capture

} // namespace

RankExecutor::RankExecutor(int rank, const StepInputs &shared, Transport &transport,
                           std::map<int, std::unique_ptr<GpuStage>> stages)
    : rank_(rank), shared_(shared), transport_(transport), stages_(std::move(stages)) {
  const Program &program = *shared.program;
  const RankStreams &mine = shared.streams->ranks[rank];
  streams_.resize(mine.numStreams);
  for (cudaStream_t &s : streams_)
    PIPERT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (uint16_t s = 0; s < 2 && s < mine.numStreams; ++s) {
    cublasHandle_t handle;
    void *workspace;
    PIPERT_CUBLAS(cublasCreate(&handle));
    blas_.push_back(handle); // owned from here, whatever fails next
    PIPERT_CUBLAS(cublasSetStream(handle, streams_[s]));
    PIPERT_CUDA(cudaMalloc(&workspace, kBlasWorkspaceBytes));
    blasWorkspaces_.push_back(workspace);
    PIPERT_CUBLAS(cublasSetWorkspace(handle, workspace, kBlasWorkspaceBytes));
  }
  events_.resize(mine.numEvents);
  for (cudaEvent_t &e : events_)
    PIPERT_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  joins_.resize(mine.numStreams);
  for (cudaEvent_t &e : joins_)
    PIPERT_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  const RankTable &table = program.ranks[rank];
  incoming_.assign(table.numOps, kNone);
  outgoing_.assign(table.numOps, kNone);
  // Recomputation: an F whose (chunk, micro-batch) an R replays keeps only its
  // input, which waits for the R (stream order: both run on the compute
  // stream, or the R's first part waits for the F's last by events).
  replayOf_.assign(table.numOps, kNone);
  std::map<std::pair<int, int>, uint32_t> replays;
  for (uint32_t i = 0; i < table.numOps; ++i)
    if (table.ops[i].kind == OpCode::R)
      replays[{table.ops[i].chunk, table.ops[i].microbatch}] = i;
  for (uint32_t i = 0; i < table.numOps && !replays.empty(); ++i)
    if (table.ops[i].kind == OpCode::F) {
      auto it = replays.find({table.ops[i].chunk, table.ops[i].microbatch});
      if (it != replays.end())
        replayOf_[i] = it->second;
    }
  for (uint32_t id = 0; id < program.numMessages; ++id) {
    const ProgramMessage &m = program.messages[id];
    if (m.from == rank)
      outgoing_[m.producerOp] = id;
    if (m.to == rank)
      incoming_[m.consumerOp] = id;
  }
  int chunks = 0;
  for (uint32_t i = 0; i < table.numOps; ++i)
    if (!onPartner(table.ops[i].kind)) // Hold and Return name the owner's chunk
      chunks = std::max(chunks, int(table.ops[i].chunk) + 1);
  storedPerChunk_.assign(size_t(chunks), 0);
  stored_.assign(size_t(chunks) * size_t(program.numMicrobatches), 0);
  PIPERT_CUDA(cudaMalloc(&loss_, sizeof(double)));
  PIPERT_CUDA(cudaMalloc(&scratchWord_, sizeof(unsigned)));
}

void RankExecutor::releaseHandles() noexcept {
  // No checks: after an error the device may be gone. A handle the
  // constructor did not get to is still null.
  stages_.clear();
  for (cudaEvent_t e : timingEvents_)
    cudaEventDestroy(e);
  for (auto *list : {&events_, &joins_})
    for (cudaEvent_t e : *list)
      if (e)
        cudaEventDestroy(e);
  for (cublasHandle_t h : blas_)
    cublasDestroy(h);
  for (void *w : blasWorkspaces_)
    cudaFree(w);
  for (cudaStream_t s : streams_)
    if (s)
      cudaStreamDestroy(s);
  cudaFree(loss_);
  cudaFree(scratchWord_);
  for (void *h : pinned_)
    cudaFreeHost(h);
}

void RankExecutor::forkFrom(cudaEvent_t event) {
  for (cudaStream_t s : streams_)
    PIPERT_CUDA(cudaStreamWaitEvent(s, event, 0));
}

void RankExecutor::joinInto(cudaStream_t origin) {
  for (size_t s = 0; s < streams_.size(); ++s) {
    PIPERT_CUDA(cudaEventRecord(joins_[s], streams_[s]));
    PIPERT_CUDA(cudaStreamWaitEvent(origin, joins_[s], 0));
  }
}

void RankExecutor::beginStep(bool timing, bool measure) {
  pc_ = 0;
  timing_ = timing;
  measure_ = measure;
  intervals_.clear();
  buffers_.assign(shared_.program->ranks[rank_].numOps, OpBuffers());
  local_.clear();
  lastOutputs_.clear();
  received_.clear();
  toSend_.clear();
  for (auto &[key, copy] : offloaded_) // a step that failed halfway: the copies are free again
    for (size_t k = 0; k < copy.host.size(); ++k)
      pinnedFree_.emplace(std::make_pair(copy.stream, copy.layout[k].bytes), copy.host[k]);
  offloaded_.clear();
  offloadedNow_ = mostOffloaded_ = 0;
  evicted_.clear(); // a step that failed halfway leaves these
  held_.clear();
  transferBytes_.clear();
  std::fill(stored_.begin(), stored_.end(), 0);
  std::fill(storedPerChunk_.begin(), storedPerChunk_.end(), 0);
  live_ = 0;
  peak_ = 0;
  cudaStream_t compute = computeStream();
  PIPERT_CUDA(cudaMemsetAsync(loss_, 0, sizeof(double), compute));
  for (auto &[chunk, stage] : stages_)
    stage->zeroGradients({compute, computeBlas()});
}

uint16_t RankExecutor::streamOf(const StreamCommand &c) const {
  // --serial-pairs: the expert stream's work runs on the compute stream, in the
  // plan's order but one sub-operation at a time.
  if (shared_.options->serialPairs && c.stream == kExpertStream)
    return kComputeStream;
  return c.stream;
}

bool RankExecutor::advance() {
  const RankStreams &mine = shared_.streams->ranks[rank_];
  for (; pc_ < mine.numCommands; ++pc_) {
    const StreamCommand &c = mine.commands[pc_];
    uint16_t s = streamOf(c);
    if (s >= streams_.size())
      throw CudaError("rank " + std::to_string(rank_) + ": command " + std::to_string(pc_) +
                      " names stream " + std::to_string(s) + " of " +
                      std::to_string(streams_.size()));
    cudaStream_t stream = streams_[s];
    switch (c.cmd) {
    case StreamCmd::Run:
      run(c);
      break;
    case StreamCmd::RecordEvent:
      PIPERT_CUDA(cudaEventRecord(events_.at(c.arg), stream));
      break;
    case StreamCmd::WaitEvent:
      PIPERT_CUDA(cudaStreamWaitEvent(stream, events_.at(c.arg), 0));
      break;
    case StreamCmd::Send: {
      auto it = toSend_.find(c.arg);
      if (it == toSend_.end())
        throw CudaError("rank " + std::to_string(rank_) + " sends message " +
                        std::to_string(c.arg) + " before an op produced it");
      transport_.send(c.arg, it->second, messageBytes(c.arg), stream);
      toSend_.erase(it);
      break;
    }
    case StreamCmd::Receive:
      if (!transport_.canReceive(c.arg))
        return false;
      received_[c.arg] = transport_.receive(c.arg, messageBytes(c.arg), stream);
      break;
    }
  }
  return true;
}

std::string RankExecutor::position() const {
  const RankStreams &mine = shared_.streams->ranks[rank_];
  if (pc_ >= mine.numCommands)
    return "rank " + std::to_string(rank_) + " is done";
  const StreamCommand &c = mine.commands[pc_];
  std::string text = "rank " + std::to_string(rank_) + " at command " + std::to_string(pc_);
  if (c.cmd == StreamCmd::Receive) {
    const ProgramMessage &m = shared_.program->messages[c.arg];
    text += ", receiving message " + std::to_string(c.arg) + " from rank " +
            std::to_string(m.from);
  }
  return text;
}

void *RankExecutor::allocate(int mb, cudaStream_t stream) {
  void *buffer = nullptr;
  PIPERT_CUDA(cudaMallocAsync(&buffer, shared_.activationBytes.at(size_t(mb)), stream));
  return buffer;
}

size_t RankExecutor::messageBytes(uint32_t id) const {
  if (id >= shared_.program->numMessages)
    throw CudaError("rank " + std::to_string(rank_) + " names message " + std::to_string(id) + " of " +
                    std::to_string(shared_.program->numMessages));
  const ProgramMessage &m = shared_.program->messages[id];
  if (m.gradient == kEvictedMessage || m.gradient == kReturnedMessage) { // packed stored buffers
    if (m.from != rank_) {
      auto known = shared_.transferBytes.find(id);
      return known != shared_.transferBytes.end() ? known->second : transport_.sentBytes(id);
    }
    auto it = transferBytes_.find(id);
    if (it == transferBytes_.end())
      throw CudaError("rank " + std::to_string(rank_) + " sends message " + std::to_string(id) +
                      " before its " + (m.gradient == kEvictedMessage ? "Evict" : "Return") + " ran");
    return it->second;
  }
  const ProgramOp &producer = shared_.program->ranks[m.from].ops[m.producerOp];
  return shared_.activationBytes.at(size_t(producer.microbatch));
}

void *RankExecutor::take(uint32_t i, bool gradient, int producerStage, int mb) {
  uint32_t id = incoming_[i];
  if (id != kNone) {
    auto it = received_.find(id);
    if (it == received_.end())
      throw CudaError("rank " + std::to_string(rank_) + " op " + std::to_string(i) +
                      " runs before message " + std::to_string(id) + " was received");
    void *buffer = it->second;
    received_.erase(it);
    return buffer;
  }
  auto it = local_.find({gradient, producerStage, mb});
  if (it == local_.end())
    throw CudaError("rank " + std::to_string(rank_) + " op " + std::to_string(i) +
                    " has no local input (stage " + std::to_string(producerStage) +
                    ", micro-batch " + std::to_string(mb) + ")");
  void *buffer = it->second;
  local_.erase(it);
  return buffer;
}

void RankExecutor::deliver(uint32_t i, bool gradient, int stage, int mb, void *buffer) {
  if (outgoing_[i] != kNone)
    toSend_[outgoing_[i]] = buffer;
  else
    local_[{gradient, stage, mb}] = buffer;
}

// The first part of op i: its inputs and a fresh output buffer.
void RankExecutor::startOp(uint32_t i, const ProgramOp &op, cudaStream_t stream) {
  OpBuffers &b = buffers_[i];
  if (timing_) {
    size_t k = intervals_.size();
    while (timingEvents_.size() < 2 * (k + 1)) {
      cudaEvent_t e;
      PIPERT_CUDA(cudaEventCreate(&e));
      timingEvents_.push_back(e);
    }
    intervals_.push_back({i, timingEvents_[2 * k], timingEvents_[2 * k + 1]});
    b.interval = k;
    PIPERT_CUDA(cudaEventRecord(intervals_[k].start, stream));
  }
  int last = shared_.program->numStages - 1;
  bool empty = shared_.options->model == ModelKind::Empty;
  switch (op.kind) {
  case OpCode::F:
    if (op.stage == 0)
      b.input = empty ? nullptr : shared_.inputs[size_t(op.microbatch)];
    else
      b.input = take(i, false, op.stage - 1, op.microbatch);
    b.output = allocate(op.microbatch, stream);
    break;
  case OpCode::B:
  case OpCode::I:
    if (op.stage == last) {
      b.input = allocate(op.microbatch, stream);
      auto it = lastOutputs_.find(op.microbatch);
      if (it == lastOutputs_.end())
        throw CudaError("rank " + std::to_string(rank_) + ": backward of micro-batch " +
                        std::to_string(op.microbatch) + " before its forward's output");
      if (!empty)
        mseLossAndGrad(it->second, shared_.targets[size_t(op.microbatch)], b.input, loss_,
                       size_t(shared_.rows.of(op.microbatch)), shared_.hidden, shared_.options->dtype, stream,
                       shared_.lossWeights.at(size_t(op.microbatch)));
      PIPERT_CUDA(cudaFreeAsync(it->second, stream));
      lastOutputs_.erase(it);
    } else {
      b.input = take(i, true, op.stage + 1, op.microbatch);
    }
    b.output = allocate(op.microbatch, stream);
    break;
  case OpCode::R: // the input was left by the forward it replays
    if (!b.input && !(empty && op.stage == 0))
      throw CudaError("rank " + std::to_string(rank_) + ": op " + std::to_string(i) +
                      " replays micro-batch " + std::to_string(op.microbatch) + " before its forward");
    b.output = allocate(op.microbatch, stream);
    break;
  case OpCode::W:
  case OpCode::Offload: // runMemoryOp, not here
  case OpCode::Reload:
  case OpCode::Evict: // runTransfer
  case OpCode::Hold:
  case OpCode::Return:
  case OpCode::Load:
    break;
  }
}

// The last part of op i: hands its output on and frees its input.
void RankExecutor::finishOp(uint32_t i, const ProgramOp &op, cudaStream_t stream) {
  OpBuffers &b = buffers_[i];
  int last = shared_.program->numStages - 1;
  bool persistentInput = (op.kind == OpCode::F || op.kind == OpCode::R) && op.stage == 0;
  if (replayOf_[i] != kNone) // a recomputed forward's input waits for its R
    buffers_[replayOf_[i]].input = b.input;
  else if (b.input && !persistentInput)
    PIPERT_CUDA(cudaFreeAsync(b.input, stream));
  if (op.kind == OpCode::R) {
    PIPERT_CUDA(cudaFreeAsync(b.output, stream)); // the F's output went on already
  } else if (op.kind == OpCode::F) {
    if (op.stage == last)
      lastOutputs_[op.microbatch] = b.output;
    else
      deliver(i, false, op.stage, op.microbatch, b.output);
  } else if (op.kind != OpCode::W) {
    if (op.stage > 0)
      deliver(i, true, op.stage, op.microbatch, b.output);
    else
      PIPERT_CUDA(cudaFreeAsync(b.output, stream));
  }
  b = OpBuffers{nullptr, nullptr, b.partsDone, b.interval};
  if (timing_ && b.interval != ~size_t(0))
    PIPERT_CUDA(cudaEventRecord(intervals_[b.interval].end, stream));
}

void RankExecutor::run(const StreamCommand &c) {
  const RankTable &table = shared_.program->ranks[rank_];
  if (c.arg >= table.numOps)
    throw CudaError("rank " + std::to_string(rank_) + ": command runs op " +
                    std::to_string(c.arg) + " of " + std::to_string(table.numOps));
  uint32_t i = c.arg;
  const ProgramOp &op = table.ops[i];
  uint16_t s = streamOf(c);
  if (isMemoryOp(op.kind)) {
    if (c.part != RunPart::Whole || buffers_[i].partsDone != 0)
      throw CudaError("rank " + std::to_string(rank_) + ": command " + std::to_string(pc_) +
                      " runs op " + std::to_string(i) + " (" + opCodeName(op.kind) +
                      ") in parts or twice");
    buffers_[i].partsDone = 4;
    runMemoryOp(i, op, streams_[s]);
    return;
  }
  if (s > kExpertStream) // the cuBLAS handles are bound to these two streams
    throw CudaError("rank " + std::to_string(rank_) + ": command " + std::to_string(pc_) +
                    " runs op " + std::to_string(i) + " on a channel stream");
  cudaStream_t stream = streams_[s];
  Launch at{stream, blas_.at(s)};
  OpBuffers &b = buffers_[i];
  int parts = c.part == RunPart::Whole ? 4 : 1;
  // A pair's half runs its sub-operations in its chain's order, each once.
  bool expected = c.part == RunPart::Whole
                      ? b.partsDone == 0
                      : op.kind != OpCode::W &&
                            (op.kind == OpCode::F ? forwardPosition(subOpOf(c.part))
                                                  : backwardPosition(subOpOf(c.part))) ==
                                b.partsDone;
  if (!expected)
    throw CudaError("rank " + std::to_string(rank_) + ": command " + std::to_string(pc_) +
                    " runs a part of op " + std::to_string(i) + " out of its order");
  const bool first = b.partsDone == 0;
  if (first)
    startOp(i, op, stream);
  if (shared_.options->model == ModelKind::Empty) {
    touch(scratchWord_, stream);
  } else {
    GpuStage &stage = *stages_.at(op.chunk);
    WeightGrad when = op.kind == OpCode::I ? WeightGrad::Deferred : WeightGrad::Now;
    for (int k = 0; k < parts; ++k) {
      int position = b.partsDone + k;
      if (op.kind == OpCode::W)
        stage.backwardWeight(op.microbatch, at);
      else if (op.kind == OpCode::F || op.kind == OpCode::R)
        stage.forwardPart(op.microbatch, parts == 4 ? kForwardParts[position] : subOpOf(c.part),
                          b.input, b.output, at);
      else
        stage.backwardPart(op.microbatch,
                           parts == 4 ? kBackwardParts[position] : subOpOf(c.part), b.input,
                           b.output, when, at);
      if (op.kind == OpCode::W)
        break;
    }
  }
  b.partsDone += parts;
  const bool done = b.partsDone >= 4;
  if (first && (op.kind == OpCode::F || op.kind == OpCode::R))
    store(op.chunk, op.microbatch);
  else if (done && (op.kind == OpCode::B || op.kind == OpCode::W))
    unstore(op.chunk, op.microbatch);
  measureActivations(); // a recomputed forward counts before it drops its state
  if (done && replayOf_[i] != kNone) {
    if (shared_.options->model != ModelKind::Empty)
      stages_.at(op.chunk)->discard(op.microbatch, at); // its R stores it again
    unstore(op.chunk, op.microbatch);
  }
  if (b.partsDone >= 4)
    finishOp(i, op, stream);
}

// Validation has checked chunks and micro-batches against the tables, so the
// index is in range. Nothing to follow without a model.
void RankExecutor::store(int chunk, int mb) {
  if (shared_.options->model == ModelKind::Empty)
    return;
  int64_t &units = stored_[size_t(chunk) * size_t(shared_.program->numMicrobatches) + size_t(mb)];
  if (units)
    throw CudaError("rank " + std::to_string(rank_) + ": chunk " + std::to_string(chunk) + " stores micro-batch " +
                    std::to_string(mb) + " twice");
  units = shared_.unitsOf(mb);
  ++storedPerChunk_[size_t(chunk)];
  live_ += units;
}

void RankExecutor::unstore(int chunk, int mb) {
  if (shared_.options->model == ModelKind::Empty)
    return;
  int64_t &units = stored_[size_t(chunk) * size_t(shared_.program->numMicrobatches) + size_t(mb)];
  if (!units)
    throw CudaError("rank " + std::to_string(rank_) + ": chunk " + std::to_string(chunk) +
                    " frees micro-batch " + std::to_string(mb) + ", which it does not store");
  live_ -= units;
  --storedPerChunk_[size_t(chunk)];
  units = 0;
}

// O(stages) per op: the live units are kept up to date by store/unstore.
void RankExecutor::measureActivations() {
  if (shared_.options->model == ModelKind::Empty || !measure_)
    return; // no stage stores anything, or a captured step
  for (const auto &[chunk, stage] : stages_) {
    size_t expected = storedPerChunk_.at(size_t(chunk));
    if (stage->storedMicroBatches() != expected)
      throw CudaError("rank " + std::to_string(rank_) + " at command " + std::to_string(pc_) + ": chunk " +
                      std::to_string(chunk) + " stores " + std::to_string(stage->storedMicroBatches()) +
                      " micro-batches, the program's ops leave " + std::to_string(expected));
  }
  peak_ = std::max(peak_, live_);
}

// How errors name memory op i (built only when one is thrown).
std::string RankExecutor::memoryOpText(uint32_t i, const ProgramOp &op) const {
  return "rank " + std::to_string(rank_) + ": op " + std::to_string(i) + " (" + opCodeName(op.kind) +
         " of chunk " + std::to_string(op.chunk) + ", micro-batch " + std::to_string(op.microbatch) + ")";
}

// Offload: the stage's buffers of (chunk, mb) to pinned host memory, then
// freed; Reload: back into fresh device buffers, handed to the stage. Both
// on `stream` (the copy stream), after the waits the program put before them.
void RankExecutor::runMemoryOp(uint32_t i, const ProgramOp &op, cudaStream_t stream) {
  if (isTransfer(op.kind))
    return runTransfer(i, op, stream);
  if (shared_.options->model == ModelKind::Empty) { // no stage stores anything
    touch(scratchWord_, stream);
    return;
  }
  GpuStage &stage = *stages_.at(op.chunk);
  const Launch at{stream, nullptr}; // a copy stream has no cuBLAS handle
  const std::pair<int, int> key{op.chunk, op.microbatch};
  if (op.kind == OpCode::Offload) {
    if (offloaded_.count(key))
      throw CudaError(memoryOpText(i, op) + ": already offloaded");
    std::vector<StoredBuffer> buffers = stage.takeStored(op.microbatch, at);
    HostCopy copy{buffers, std::vector<void *>(buffers.size(), nullptr), stream};
    for (size_t k = 0; k < buffers.size(); ++k) {
      auto free = pinnedFree_.find({stream, buffers[k].bytes});
      if (free != pinnedFree_.end()) {
        copy.host[k] = free->second;
        pinnedFree_.erase(free);
      } else { // the first step only: later steps make the same choices
        PIPERT_CUDA(cudaMallocHost(&copy.host[k], buffers[k].bytes));
        pinned_.push_back(copy.host[k]);
        pinnedBytes_ += buffers[k].bytes;
      }
      PIPERT_CUDA(cudaMemcpyAsync(copy.host[k], buffers[k].data, buffers[k].bytes,
                                  cudaMemcpyDeviceToHost, stream));
      PIPERT_CUDA(cudaFreeAsync(buffers[k].data, stream));
      copy.layout[k].data = nullptr;
    }
    offloaded_.emplace(key, std::move(copy));
    mostOffloaded_ = std::max(mostOffloaded_, ++offloadedNow_);
    unstore(op.chunk, op.microbatch);
  } else {
    auto it = offloaded_.find(key);
    if (it == offloaded_.end())
      throw CudaError(memoryOpText(i, op) + ": nothing of it was offloaded");
    HostCopy copy = std::move(it->second);
    offloaded_.erase(it);
    --offloadedNow_;
    std::vector<StoredBuffer> buffers = copy.layout;
    for (size_t k = 0; k < buffers.size(); ++k) {
      buffers[k].data = nullptr;
      PIPERT_CUDA(cudaMallocAsync(&buffers[k].data, buffers[k].bytes, stream));
      PIPERT_CUDA(cudaMemcpyAsync(buffers[k].data, copy.host[k], buffers[k].bytes,
                                  cudaMemcpyHostToDevice, stream));
      // Free for a later Offload on this stream, which stream order puts after this copy.
      pinnedFree_.emplace(std::make_pair(stream, buffers[k].bytes), copy.host[k]);
    }
    try {
      stage.putStored(op.microbatch, buffers, at);
    } catch (...) { // the stage did not take them
      for (StoredBuffer &b : buffers)
        cudaFreeAsync(b.data, stream);
      throw;
    }
    store(op.chunk, op.microbatch);
  }
  measureActivations();
}

// BPipe's transfers, on `stream` (the copy stream) after the program's waits;
// the messages' Send/Receive commands run on their channel streams. Evict:
// the stage's buffers of (chunk, mb) packed into the evicted message, freed;
// Hold: the received buffer kept for its owner; Return: that buffer sent back;
// Load: unpacked into buffers of the Evict's layout, handed to the stage.
void RankExecutor::runTransfer(uint32_t i, const ProgramOp &op, cudaStream_t stream) {
  const Program &program = *shared_.program;
  const bool empty = shared_.options->model == ModelKind::Empty;
  const Launch at{stream, nullptr}; // a copy stream has no cuBLAS handle
  const std::pair<int, int> key{op.chunk, op.microbatch};
  const bool sends = op.kind == OpCode::Evict || op.kind == OpCode::Return;
  const uint32_t id = sends ? outgoing_[i] : incoming_[i];
  if (id == kNone)
    throw CudaError(memoryOpText(i, op) + ": has no message");
  const ProgramMessage &m = program.messages[id];
  const int peer = sends ? m.to : m.from;
  const std::tuple<int, int, int> heldKey{onPartner(op.kind) ? peer : rank_, op.chunk, op.microbatch};
  void *received = nullptr;
  if (!sends) {
    auto it = received_.find(id);
    if (it == received_.end())
      throw CudaError(memoryOpText(i, op) + ": runs before message " + std::to_string(id) + " was received");
    received = it->second;
    received_.erase(it);
  }
  switch (op.kind) {
  case OpCode::Evict: {
    if (evicted_.count(key))
      throw CudaError(memoryOpText(i, op) + ": already evicted");
    std::vector<StoredBuffer> buffers;
    if (!empty)
      buffers = stages_.at(op.chunk)->takeStored(op.microbatch, at);
    const size_t bytes = packedBytes(buffers);
    char *packed = nullptr;
    PIPERT_CUDA(cudaMallocAsync(reinterpret_cast<void **>(&packed), bytes, stream));
    size_t offset = 0;
    for (StoredBuffer &b : buffers) {
      if (b.bytes)
        PIPERT_CUDA(cudaMemcpyAsync(packed + offset, b.data, b.bytes, cudaMemcpyDeviceToDevice, stream));
      if (b.data)
        PIPERT_CUDA(cudaFreeAsync(b.data, stream));
      b.data = nullptr;
      offset += b.bytes;
    }
    evicted_.emplace(key, std::move(buffers));
    toSend_[id] = packed;
    transferBytes_[id] = bytes;
    unstore(op.chunk, op.microbatch);
    break;
  }
  case OpCode::Hold:
    if (held_.count(heldKey))
      throw CudaError(memoryOpText(i, op) + ": already holds it for rank " + std::to_string(peer));
    held_.emplace(heldKey, Held{received, messageBytes(id)});
    if (!empty)
      live_ += shared_.unitsOf(op.microbatch); // on this rank's device now
    break;
  case OpCode::Return: {
    auto it = held_.find(heldKey);
    if (it == held_.end())
      throw CudaError(memoryOpText(i, op) + ": holds nothing of it for rank " + std::to_string(peer));
    toSend_[id] = it->second.data; // the transport frees it once sent
    transferBytes_[id] = it->second.bytes;
    held_.erase(it);
    if (!empty)
      live_ -= shared_.unitsOf(op.microbatch);
    break;
  }
  case OpCode::Load: {
    auto it = evicted_.find(key);
    if (it == evicted_.end()) {
      cudaFreeAsync(received, stream);
      throw CudaError(memoryOpText(i, op) + ": nothing of it was evicted");
    }
    std::vector<StoredBuffer> buffers = std::move(it->second);
    evicted_.erase(it);
    if (packedBytes(buffers) != messageBytes(id)) {
      cudaFreeAsync(received, stream);
      throw CudaError(memoryOpText(i, op) + ": message " + std::to_string(id) + " has " +
                      std::to_string(messageBytes(id)) + " bytes, its Evict sent " +
                      std::to_string(packedBytes(buffers)));
    }
    size_t offset = 0;
    for (StoredBuffer &b : buffers) {
      PIPERT_CUDA(cudaMallocAsync(&b.data, b.bytes, stream));
      if (b.bytes)
        PIPERT_CUDA(cudaMemcpyAsync(b.data, static_cast<char *>(received) + offset, b.bytes,
                                    cudaMemcpyDeviceToDevice, stream));
      offset += b.bytes;
    }
    PIPERT_CUDA(cudaFreeAsync(received, stream));
    if (!empty) {
      try {
        stages_.at(op.chunk)->putStored(op.microbatch, buffers, at);
      } catch (...) { // the stage did not take them
        for (StoredBuffer &b : buffers)
          cudaFreeAsync(b.data, stream);
        throw;
      }
    }
    store(op.chunk, op.microbatch);
    break;
  }
  default:
    throw CudaError(memoryOpText(i, op) + ": is not a transfer");
  }
  measureActivations();
}

} // namespace pipert::cuda
