// GpuStage: one pipeline stage on the GPU, the device twin of pipert::Stage.
// Same protocol (forward parts, backward parts with the weight half now or
// deferred, backwardWeight), same math as the CPU stage it is built from, so
// the single-device CPU reference checks it. Every call only enqueues work on
// the stream it is given (with that stream's cuBLAS handle): the executor
// decides which stream runs which sub-operation and orders streams by events.
//
// Element type of activations and activation gradients: DType (fp32, or bf16
// storage with fp32 accumulation in every GEMM and reduction). Parameters are
// kept in fp32 (with a bf16 copy for bf16 GEMMs); weight gradients accumulate
// in fp32.
//
// Per-micro-batch state is allocated stream-ordered (cudaMallocAsync) on the
// stream of the part that creates it and freed on the stream of the part that
// ends it, so a step can be captured into a CUDA graph. Host-side bookkeeping
// (which micro-batches are stored) is touched only by the enqueuing thread.
#pragma once

#include "pipert/Model.h"
#include "pipert/SubOp.h"
#include "pipert/cuda/ExpertExchange.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

namespace pipert::cuda {

enum class DType { F32, BF16 };
const char *dtypeName(DType dtype); // "fp32", "bf16"
size_t dtypeBytes(DType dtype);

// Where a part runs: a stream and a cuBLAS handle already bound to it (with its
// own workspace, so capture never allocates).
struct Launch {
  cudaStream_t stream;
  cublasHandle_t blas;
};

// One device buffer of a micro-batch's stored state, as an Offload moves it:
// `slot` is the stage's own tag for it (putStored puts it back there).
struct StoredBuffer {
  void *data;
  size_t bytes;
  int slot;
};

// The rows (tokens) of each micro-batch's activations: `tokens` times the
// micro-batch's size (the schedule's `sizes`, by micro-batch index; empty:
// every size is 1), as the CPU program's BatchSpec::tokensOf.
struct MicroBatchRows {
  int tokens = 0;
  std::vector<int> sizes;
  int of(int mb) const { return sizes.empty() ? tokens : tokens * sizes.at(static_cast<size_t>(mb)); }
  int most() const {
    int size = 1;
    for (int s : sizes)
      size = s > size ? s : size;
    return tokens * size;
  }
};

// A parameter's fp32 gradient on the device, named as the CPU stage names it.
struct DeviceGradient {
  std::string name;
  float *data;
  size_t rows, cols;
  bool expertSharded = false; // an expert's: each expert-parallel replica holds its own
};

class GpuStage {
public:
  virtual ~GpuStage() = default;
  int stageIndex() const { return stageIndex_; }
  int hidden() const { return hidden_; }
  DType dtype() const { return dtype_; }

  // Activations are tokens x hidden, row-major, of dtype(). For a dense stage,
  // Dispatch is the identity and Combine the residual add; for an MoE stage
  // they move tokens to and from the experts (see GpuMoeStage).
  virtual void forwardPart(int mb, SubOp part, const void *input, void *output, const Launch &at) = 0;
  virtual void backwardPart(int mb, SubOp part, const void *gradOutput, void *gradInput,
                            WeightGrad when, const Launch &at) = 0;
  virtual void backwardWeight(int mb, const Launch &at) = 0;
  // Drops mb's stored state after a forward whose micro-batch is recomputed
  // (an R replays the forward before the backward).
  virtual void discard(int mb, const Launch &at) = 0;

  // Offload and Reload (the schedule's memory ops), the device twin of
  // Stage::takeStored/putStored. takeStored hands over every device buffer
  // mb stores (mb's forward complete, no backward part run; the buffers' data
  // is ready after the work enqueued so far on the stream that ran the
  // forward), and mb counts as not stored: any call on it but putStored then
  // throws std::logic_error. The caller copies them and frees them
  // stream-ordered. putStored(mb, buffers, at) gives back buffers of the same
  // slots and sizes, holding the same bytes once the work enqueued on
  // at.stream so far is done; the stage owns them again and mb is stored as
  // before. Neither enqueues device work of its own on a GPU stage (the host
  // simulation's stage may).
  virtual std::vector<StoredBuffer> takeStored(int mb, const Launch &at) = 0;
  virtual void putStored(int mb, std::vector<StoredBuffer> buffers, const Launch &at) = 0;

  // Micro-batches with stored state (host bookkeeping, like Stage).
  virtual size_t storedMicroBatches() const = 0;
  virtual void zeroGradients(const Launch &at) = 0;
  // In the CPU stage's parameters() order; the device buffers stay valid for the
  // stage's life (an all-reduce sums them in place).
  virtual std::vector<DeviceGradient> gradients() = 0;

protected:
  GpuStage(int stageIndex, int hidden, DType dtype)
      : stageIndex_(stageIndex), hidden_(hidden), dtype_(dtype) {}

private:
  int stageIndex_, hidden_;
  DType dtype_;
};

// The device twin of `cpu` (a DenseStage without attention, or an MoeStage
// without attention): same parameters, copied from it. `rows` gives each
// micro-batch's activation rows (an int: the same for every micro-batch). An MoE stage's dispatch and combine go through `experts`
// (null: all experts local), and `cpu` must hold that participant's shard.
// Throws std::invalid_argument for a stage kind or option the GPU does not
// support (attention) or a shard that does not match `experts`.
std::unique_ptr<GpuStage> makeGpuStage(Stage<double> &cpu, const StageSpec &spec, const MicroBatchRows &rows,
                                       DType dtype,
                                       std::shared_ptr<ExpertExchange> experts = nullptr);
inline std::unique_ptr<GpuStage> makeGpuStage(Stage<double> &cpu, const StageSpec &spec, int tokens,
                                              DType dtype,
                                              std::shared_ptr<ExpertExchange> experts = nullptr) {
  return makeGpuStage(cpu, spec, MicroBatchRows{tokens, {}}, dtype, std::move(experts));
}

// The loss of the last stage: loss += w sum((y - t)^2) / (tokens * hidden) in
// fp64 on the device, and dy = 2 w (y - t) / (tokens * hidden), as pipert's
// mseLoss and mseLossGrad scaled by the micro-batch's loss weight w
// (BatchSpec::lossWeight: 1 without sizes). y, dy: dtype; target: dtype.
void mseLossAndGrad(const void *output, const void *target, void *gradOutput, double *loss,
                    size_t tokens, size_t hidden, DType dtype, cudaStream_t stream, double weight = 1.0);

// dst[i] = src[i] converted to dtype (upload of inputs and targets).
void uploadActivation(const std::vector<double> &host, void *device, DType dtype, cudaStream_t stream);

} // namespace pipert::cuda
