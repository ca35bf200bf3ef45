// The MLP on the GPU and what both GPU stages share:
//   DeviceWeight    a parameter kind on the device (fp32 value and gradient, the
//                   GEMM operand copy), for one copy or for E same-shaped experts;
//   GpuMlp          Linear(h, f) -> GELU -> Linear(f, h) over E same-shaped
//                   blocks at once (batched GEMMs): the dense stage's MLP (E = 1)
//                   and the MoE stage's experts;
//   TrackedGpuStage the per-micro-batch protocol checks of pipert::Stage
//                   (MicroBatchTracker) in front of the device work;
// and the dense stage's factory (GpuMlpStage.cu).
//
// Precision (AT = float or __nv_bfloat16): what feeds a GEMM is stored as AT
// (inputs, GELU outputs, gradients at GEMM outputs); GEMM outputs, bias adds,
// GELU inputs and gradient sums are fp32. With AT = float everything is fp32.
#pragma once

#include "GpuKernels.cuh"

#include "pipert/MicroBatchTracker.h"
#include "pipert/Stage.h"
#include "pipert/cuda/GpuStage.h"

#include <map>
#include <stdexcept>
#include <type_traits>
#include <memory>
#include <string>
#include <vector>

namespace pipert::cuda {

// `copies` same-shaped CPU tensors (rows x cols each), contiguous on the device
// in that order: fp32 values, fp32 gradients (zeroed), and for a GEMM operand
// in bf16 a bf16 copy of the fp32 values (for fp32 the operand is the value).
template <typename AT>
class DeviceWeight {
public:
  DeviceWeight(const std::vector<const Tensor<double> *> &cpu, size_t rows, size_t cols, bool gemmOperand);
  ~DeviceWeight();
  DeviceWeight(const DeviceWeight &) = delete;
  DeviceWeight &operator=(const DeviceWeight &) = delete;

  size_t rows() const { return rows_; }
  size_t cols() const { return cols_; }
  size_t copyElements() const { return rows_ * cols_; }
  const float *value() const { return value_; }
  const AT *operand() const { return operand_; }
  float *grad(size_t copy = 0) { return grad_ + copy * copyElements(); }
  void zeroGradient(cudaStream_t stream);

private:
  void release() noexcept;

  size_t rows_, cols_, copies_;
  float *value_ = nullptr, *grad_ = nullptr;
  AT *operand_ = nullptr;
  bool ownsOperand_ = false;
};

// E blocks of fc1 (h x f, bias f), GELU, fc2 (f x h, bias h), each over R rows
// (`rows`, per call: a micro-batch's). Activation arguments are E x R x width,
// row-major, contiguous per block. Every call enqueues on at.stream with at.blas.
template <typename AT>
class GpuMlp {
public:
  // The CPU parameters cpu[first, first + 4E): per block fc1.weight, fc1.bias,
  // fc2.weight, fc2.bias (MlpBlock::appendParameters' order). Throws
  // std::invalid_argument on a missing or wrongly shaped one.
  GpuMlp(int hidden, int ffn, int blocks, const std::vector<Parameter<double>> &cpu, size_t first);

  // u = x W1 + b1 (fp32), v = gelu(u), m = v W2 + b2 (fp32).
  void forward(int rows, const AT *x, float *u, AT *v, float *m, const Launch &at) const;
  // du = (dm W2^T) * gelu'(u); dx = du W1^T + dxBeta * dx (dxBeta 1 adds into dx).
  void backwardInput(int rows, const AT *dm, const float *u, AT *du, float *dx, float dxBeta, const Launch &at) const;
  // W2 += v^T dm, b2 += colsum(dm), W1 += x^T du, b1 += colsum(du).
  void backwardWeight(int rows, const AT *x, const AT *v, const AT *dm, const AT *du, const Launch &at);

  void zeroGradients(cudaStream_t stream);
  // In the CPU order given to the constructor, with the CPU names.
  const std::vector<DeviceGradient> &gradients() const { return gradients_; }

private:
  int hidden_, ffn_, blocks_;
  std::unique_ptr<DeviceWeight<AT>> w1_, b1_, w2_, b2_;
  std::vector<DeviceGradient> gradients_;
};

// pipert::Stage's protocol for a GPU stage: checks each call with a
// MicroBatchTracker (std::logic_error on misuse, before anything is enqueued),
// checks the pointers a part needs, and releases a micro-batch's state after
// its last backward part (full B) or its W.
class TrackedGpuStage : public GpuStage {
public:
  void forwardPart(int mb, SubOp part, const void *input, void *output, const Launch &at) final;
  void backwardPart(int mb, SubOp part, const void *gradOutput, void *gradInput, WeightGrad when,
                    const Launch &at) final;
  void backwardWeight(int mb, const Launch &at) final;
  void discard(int mb, const Launch &at) final;
  std::vector<StoredBuffer> takeStored(int mb, const Launch &at) final;
  void putStored(int mb, std::vector<StoredBuffer> buffers, const Launch &at) final;
  size_t storedMicroBatches() const final { return tracker_.pending(); }

protected:
  TrackedGpuStage(const char *kind, int stageIndex, int hidden, const MicroBatchRows &rows, DType dtype);
  int tokens(int mb) const { return rows_.of(mb); } // micro-batch mb's rows
  int mostTokens() const { return rows_.most(); }

  virtual void runForwardPart(int mb, SubOp part, const void *input, void *output, const Launch &at) = 0;
  virtual void runBackwardPart(int mb, SubOp part, const void *gradOutput, void *gradInput, WeightGrad when,
                               const Launch &at) = 0;
  virtual void runBackwardWeight(int mb, const Launch &at) = 0;
  // Frees mb's remaining device state on `stream` and forgets it.
  virtual void releaseMicroBatch(int mb, cudaStream_t stream) = 0;
  // Offload / Reload after the tracker's checks (takeSaved / putSaved).
  virtual std::vector<StoredBuffer> runTakeStored(int mb) = 0;
  virtual void runPutStored(int mb, const std::vector<StoredBuffer> &buffers) = 0;
  const std::string &owner() const { return tracker_.owner(); }

private:
  MicroBatchRows rows_;
  MicroBatchTracker tracker_;
};

// Frees micro-batch mb's saved device buffers (a Saved with forEach over its
// pointers) on `stream` and forgets it; nothing when none are saved. Both
// stages' releaseMicroBatch.
template <typename Saved>
void releaseSaved(std::map<int, Saved> &saved, int mb, cudaStream_t stream) {
  auto it = saved.find(mb);
  if (it == saved.end())
    return;
  it->second.forEach([stream](auto *&p) { freeOn(p, stream); });
  saved.erase(it);
}

// Offload of micro-batch mb's saved device buffers (a Saved with forEach over
// its pointers): moves out every one that is set, tagged with its position in
// forEach's order and sized by bytesOf(position), and leaves those pointers
// null. A set pointer with no size is a stage bug (std::logic_error).
template <typename Saved, typename BytesOf>
std::vector<StoredBuffer> takeSaved(std::map<int, Saved> &saved, int mb, BytesOf bytesOf,
                                    const std::string &owner) {
  std::vector<StoredBuffer> out;
  int slot = 0;
  saved.at(mb).forEach([&](auto *&p) {
    if (p) {
      size_t bytes = bytesOf(slot);
      if (bytes == 0)
        throw std::logic_error(owner + ", micro-batch " + std::to_string(mb) + ": stored buffer " +
                               std::to_string(slot) + " has no size to offload");
      out.push_back({p, bytes, slot});
      p = nullptr;
    }
    ++slot;
  });
  return out;
}

// Reload: puts the buffers takeSaved handed out back in their slots (each
// slot must be empty: it was emptied by the offload).
template <typename Saved>
void putSaved(std::map<int, Saved> &saved, int mb, const std::vector<StoredBuffer> &buffers,
              const std::string &owner) {
  Saved &st = saved.at(mb);
  size_t next = 0;
  int slot = 0;
  st.forEach([&](auto *&p) {
    if (next < buffers.size() && buffers[next].slot == slot) {
      if (p)
        throw std::logic_error(owner + ", micro-batch " + std::to_string(mb) + ": reloaded buffer " +
                               std::to_string(slot) + " is already set");
      p = static_cast<std::remove_reference_t<decltype(p)>>(buffers[next++].data);
    }
    ++slot;
  });
  if (next != buffers.size())
    throw std::logic_error(owner + ", micro-batch " + std::to_string(mb) + ": " +
                           std::to_string(buffers.size() - next) +
                           " reloaded buffers name no slot the offload emptied");
}

// The dense stage (DenseConfig without attention) as a GpuStage; see
// GpuMlpStage.cu. Throws std::invalid_argument for attention or a parameter
// list that does not match.
std::unique_ptr<GpuStage> makeGpuDenseStage(Stage<double> &cpu, const DenseConfig &config, const MicroBatchRows &rows,
                                            DType dtype);

} // namespace pipert::cuda
