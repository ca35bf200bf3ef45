// One rank of a CUDA stream program: its streams, events, stages and buffers,
// and the interpreter of its command list (pipert/StreamProgram.h). advance()
// enqueues commands in order until the list ends or a receive cannot be
// enqueued yet (in-process: the sender has not enqueued its send), so one host
// thread can drive every rank of the in-process transport and a proved
// schedule never stalls it. Nothing here waits for the GPU.
//
// Buffers are allocated and freed stream-ordered (cudaMallocAsync): an op's
// output on the stream of its first part, its inputs freed on the stream of
// its last, so a whole step can be captured into a CUDA graph.
//
// Offload and Reload run on the rank's copy stream (the stream lowering's
// RankStreamProgram::copyStream, ordered against the compute stream by the
// program's own events): an Offload takes the stage's stored device buffers
// of (chunk, micro-batch), copies each into pinned host memory and frees it
// stream-ordered; a Reload allocates device buffers, copies back and hands
// them to the stage. The pinned buffers are made on the first (eager) step
// and kept for the executor's life, reused through a free list (Reload to a
// later Offload on the same stream), so a captured step allocates none
// (cudaMallocHost cannot be captured) and a rank's pinned memory is what it
// holds offloaded at once.
//
// BPipe's transfers run on the copy stream too: an Evict takes the stage's
// stored buffers of (chunk, micro-batch), packs them into one device buffer
// (in slot order) and frees them; that buffer is the evicted message. A Hold
// keeps the received buffer on the partner (counted live there, as the
// compiler predicts) until its Return sends it back; a Load unpacks the
// returned buffer into buffers of the layout its Evict recorded and hands
// them to the stage. A transfer message's byte size is the packed size: the
// sender knows it; the receiver asks the in-process transport
// (Transport::sentBytes), or over NCCL the sizes StepRunner measured on a
// probe of the sender's stage before the first step (StepInputs).
//
// Activations live: after every command that runs an op, the micro-batches
// the rank's stages store (host bookkeeping: what the enqueued work leaves on
// the device), each counted by its size, and the step's peak of it, as the
// CPU program measures it against the compiler's prediction. The executor
// follows them op by op and checks its list against the stages' own count.
#pragma once

#include "CudaOptions.h"
#include "Transport.h"

#include "pipert/Program.h"
#include "pipert/StreamProgram.h"
#include "pipert/cuda/GpuStage.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace pipert::cuda {

// What every rank shares: the program, the options, the data on the device.
struct StepInputs {
  const Program *program;
  const StreamProgram *streams;
  const CudaOptions *options;
  MicroBatchRows rows;               // each micro-batch's tokens (sizes x --seq)
  size_t hidden;
  std::vector<size_t> activationBytes; // per micro-batch: one activation or gradient
  std::vector<double> lossWeights;     // per micro-batch (BatchSpec::lossWeight)
  std::vector<void *> inputs, targets; // per micro-batch, dtype; empty for --model empty
  // Over NCCL: the byte size of each transfer message this process receives
  // (StepRunner::sizeTransfers); in-process the transport tells it.
  std::map<uint32_t, size_t> transferBytes;
  // Micro-batch sizes (the schedule's `sizes`) weight the activation count.
  int64_t unitsOf(int mb) const { return rows.sizes.empty() ? 1 : rows.sizes.at(size_t(mb)); }
};

// A transfer message is never empty (--model empty stores nothing, and a
// zero-byte allocation has no address to send).
constexpr size_t kLeastTransferBytes = 16;

// The bytes of the message an Evict packs `buffers` into (the Load and the
// NCCL receiver's probe size it the same way).
inline size_t packedBytes(const std::vector<StoredBuffer> &buffers) {
  size_t total = 0;
  for (const StoredBuffer &b : buffers)
    total += b.bytes;
  return std::max(total, kLeastTransferBytes);
}

struct OpInterval {
  uint32_t op;
  cudaEvent_t start, end; // timing events (with --trace)
};

class RankExecutor {
public:
  RankExecutor(int rank, const StepInputs &shared, Transport &transport,
               std::map<int, std::unique_ptr<GpuStage>> stages);
  RankExecutor(const RankExecutor &) = delete;
  RankExecutor &operator=(const RankExecutor &) = delete;

  int rank() const { return rank_; }
  // Every stream waits for `event` (recorded on the step's origin stream).
  void forkFrom(cudaEvent_t event);
  // Records the end of every stream; `origin` waits for all of them.
  void joinInto(cudaStream_t origin);
  // `measure`: follow the activations the stages store (eager steps; a
  // captured step enqueues the same commands, and the host simulation's
  // stages only run them at replay).
  void beginStep(bool timing, bool measure = true);
  // Enqueues commands until done (true) or blocked on a receive (false).
  bool advance();
  bool done() const { return pc_ == numCommands(); }
  uint32_t commandsEnqueued() const { return pc_; }
  // Describes the command advance() stopped at (for errors).
  std::string position() const;

  cudaStream_t computeStream() const { return streams_[kComputeStream]; }
  cublasHandle_t computeBlas() const { return blas_[kComputeStream]; }
  std::map<int, std::unique_ptr<GpuStage>> &stages() { return stages_; }
  double *deviceLoss() const { return loss_; }
  const std::vector<OpInterval> &intervals() const { return intervals_; }
  // The most micro-batches the rank's stages stored at once in this step
  // (meaningful for an eager step: a captured step's host simulation runs
  // the stages later).
  int64_t peakActivations() const { return peak_; }
  // Pinned host memory made for Offloads so far, and the most micro-batches
  // this step held in host memory at once.
  size_t pinnedBytes() const { return pinnedBytes_; }
  size_t pinnedBuffers() const { return pinned_.size(); }
  int64_t mostOffloaded() const { return mostOffloaded_; }

private:
  struct OpBuffers {
    void *input = nullptr;  // activation (F) or output gradient (B, I)
    void *output = nullptr; // output (F) or input gradient (B, I)
    int partsDone = 0;
    size_t interval = ~size_t(0);
  };
  using LocalKey = std::tuple<int, int, int>; // gradient?, producing stage, micro-batch

  uint32_t numCommands() const { return shared_.streams->ranks[rank_].numCommands; }
  uint16_t streamOf(const StreamCommand &c) const;
  void run(const StreamCommand &c);
  void startOp(uint32_t i, const ProgramOp &op, cudaStream_t stream);
  void finishOp(uint32_t i, const ProgramOp &op, cudaStream_t stream);
  void *take(uint32_t i, bool gradient, int producerStage, int mb);
  void deliver(uint32_t i, bool gradient, int stage, int mb, void *buffer);
  void *allocate(int mb, cudaStream_t stream);
  // Bytes of message id (its micro-batch's activation).
  size_t messageBytes(uint32_t id) const;
  void runMemoryOp(uint32_t i, const ProgramOp &op, cudaStream_t stream);
  void runTransfer(uint32_t i, const ProgramOp &op, cudaStream_t stream);
  std::string memoryOpText(uint32_t i, const ProgramOp &op) const;
  void measureActivations();
  void store(int chunk, int mb);   // (chunk, mb) is on the device now
  void unstore(int chunk, int mb); // and now no longer

  int rank_;
  const StepInputs &shared_;
  Transport &transport_;
  std::map<int, std::unique_ptr<GpuStage>> stages_; // by chunk
  std::vector<cudaStream_t> streams_;
  std::vector<cublasHandle_t> blas_;     // compute and expert streams
  std::vector<void *> blasWorkspaces_;
  std::vector<cudaEvent_t> events_;
  std::vector<cudaEvent_t> joins_;       // per stream, for joinInto
  std::vector<uint32_t> incoming_, outgoing_; // per op: message id or ~0
  std::vector<uint32_t> replayOf_;       // per F: the R replaying it (its input goes there), or ~0
  std::vector<OpBuffers> buffers_;       // per op, this step
  std::map<LocalKey, void *> local_;     // same-rank hand-offs
  std::map<int, void *> lastOutputs_;    // last stage: output per micro-batch
  std::map<uint32_t, void *> received_, toSend_;
  void *scratchWord_ = nullptr;          // --model empty writes here
  double *loss_ = nullptr;
  bool timing_ = false;
  std::vector<OpInterval> intervals_;
  std::vector<cudaEvent_t> timingEvents_; // reused across steps
  uint32_t pc_ = 0;
  // Offload/Reload: each offloaded (chunk, micro-batch)'s buffer layout and
  // pinned host copies until its Reload, which hands the copies back to a
  // free list by (stream, bytes): a later Offload on the same stream reuses
  // them (stream order puts its copy after the Reload's). Every step makes
  // the same choices, so only the first (eager) one allocates; pinned_ owns
  // them all.
  struct HostCopy {
    std::vector<StoredBuffer> layout; // slots and sizes (data: the device pointers, gone)
    std::vector<void *> host;         // one pinned buffer per entry of layout
    cudaStream_t stream;
  };
  std::map<std::pair<int, int>, HostCopy> offloaded_;
  std::multimap<std::pair<cudaStream_t, size_t>, void *> pinnedFree_;
  std::vector<void *> pinned_;
  // Transfers: each evicted (chunk, micro-batch)'s layout until its Load; the
  // buffers this rank holds for a peer by (owner, chunk, micro-batch); the
  // packed byte size of each transfer message this rank sends.
  std::map<std::pair<int, int>, std::vector<StoredBuffer>> evicted_;
  struct Held {
    void *data;
    size_t bytes;
  };
  std::map<std::tuple<int, int, int>, Held> held_;
  std::map<uint32_t, size_t> transferBytes_;
  size_t pinnedBytes_ = 0;
  int64_t offloadedNow_ = 0, mostOffloaded_ = 0; // micro-batches in host memory
  // (chunk, micro-batch) whose activations the stages hold on the device, by
  // the program's ops (checked against the stages' own count), and the most
  // units (micro-batch sizes) held at once this step.
  std::vector<int64_t> stored_;          // units by chunk * M + micro-batch; 0: not stored
  std::vector<size_t> storedPerChunk_;   // micro-batches stored per chunk
  int64_t live_ = 0, peak_ = 0;          // units stored; their most this step
  bool measure_ = true;
  // Declared last, so destroyed first: frees the handles above at destruction
  // and also when the constructor throws halfway (no destructor runs then).
  void releaseHandles() noexcept;
  struct HandleRelease {
    RankExecutor *self;
    ~HandleRelease() { self->releaseHandles(); }
  } handleRelease_{this};
};

} // namespace pipert::cuda
