// GpuKernels: the device building blocks of the GPU stages (GpuMlpStage,
// GpuMoeStage), as host functions that only enqueue work on a given stream:
// a row-major GEMM over cuBLAS, the element-wise and reduction kernels of the
// MLP, the router and token movement of the MoE stage, the MSE loss, and
// stream-ordered allocation. Nothing here synchronizes or reads device data on
// the host, so every call can be captured into a CUDA graph.
//
// Element types: AT is the activation / GEMM operand type (float or
// __nv_bfloat16); every GEMM accumulates and writes fp32 (CUBLAS_COMPUTE_32F,
// never TF32), every reduction accumulates in fp32 (the loss in fp64).
#pragma once

#include "pipert/cuda/CudaCheck.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <type_traits>

namespace pipert::cuda {

// The cuBLAS / CUDA data type of an element type.
template <typename T> constexpr cudaDataType_t cudaDataTypeOf() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, __nv_bfloat16>, "float or bf16 only");
  return std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16BF;
}

// Stream-ordered allocation of n elements (a micro-batch's saved state and a
// part's scratch); capturable, unlike cudaMalloc.
template <typename T> T *allocOn(size_t n, cudaStream_t stream) {
  void *p = nullptr;
  PIPERT_CUDA(cudaMallocAsync(&p, n * sizeof(T), stream));
  return static_cast<T *>(p);
}
// Frees p (if set) after the work already enqueued on `stream`, and clears it.
template <typename T> void freeOn(T *&p, cudaStream_t stream) {
  if (p)
    PIPERT_CUDA(cudaFreeAsync(p, stream));
  p = nullptr;
}
// For destructors, which must not throw: frees p (cudaFree also frees
// stream-ordered memory), ignoring errors.
template <typename T> void freeQuietly(T *&p) noexcept {
  if (p)
    static_cast<void>(cudaFree(p));
  p = nullptr;
}

// One GEMM operand: row-major storage; `transposed` means the GEMM uses its
// transpose; `stride` is the element distance between batch entries.
struct GemmOperand {
  const void *data;
  bool transposed;
  long long stride;
};

// C = op(A) op(B) + beta C, all row-major: op(A) is m x k, op(B) is k x n, C is
// m x n in fp32 (a stride of strideC elements between batch entries). A and B
// have element type `abType` (CUDA_R_32F or CUDA_R_16BF). `blas` must already
// be bound to the stream the caller runs on. beta = 1 accumulates (weight
// gradients, a gradient sum).
void gemm(cublasHandle_t blas, cudaDataType_t abType, int m, int n, int k, GemmOperand a, GemmOperand b,
          float beta, float *c, long long strideC, int batch = 1);

// out[i] = in[i] converted (round to nearest even into bf16).
template <typename In, typename Out> void convert(const In *in, Out *out, size_t n, cudaStream_t stream);

// The MLP of `groups` same-shaped blocks of rowsPerGroup x cols (the MoE
// experts; one group for the dense MLP); bias `b` holds one row per group.
// u += b (fp32 GEMM output, in place); v = gelu(u) (tanh approximation).
template <typename AT>
void biasGelu(float *u, const float *b, AT *v, size_t rowsPerGroup, size_t cols, int groups, cudaStream_t stream);
// y += b (in place).
void addBias(float *y, const float *b, size_t rowsPerGroup, size_t cols, int groups, cudaStream_t stream);
// du = dv * gelu'(u), element-wise.
template <typename AT> void geluBackward(const float *u, const float *dv, AT *du, size_t n, cudaStream_t stream);
// grad[g][c] += sum over r of x[g][r][c] (bias gradients), summed in fp32.
template <typename AT>
void addColumnSums(const AT *x, float *grad, size_t rowsPerGroup, size_t cols, int groups, cudaStream_t stream);
// out = a + m (the residual add of the dense Combine).
template <typename AT> void residualAdd(const AT *a, const float *m, AT *out, size_t n, cudaStream_t stream);

// ---- MoE: router and token movement. A "slot" is one (token t, choice j),
// index t*k + j; an expert row is e*capacity + r. ----

// Per token: p = softmax(logits row over E), the k largest p (largest first,
// ties to the lower expert index), gates renormalized over the chosen ones.
// logits: tokens x E; experts, gates: tokens x k.
void routeTopK(const float *logits, int tokens, int experts, int k, int *chosen, float *gates,
               cudaStream_t stream);
// Assigns each slot its row in its expert's buffer, slots of an expert in
// ascending slot order (the CPU TokenExchange order with one participant):
// slotRow[slot] = e*capacity + position, rowSlot[row] = slot, or -1 for rows
// past the expert's count. A token picks an expert at most once, so
// capacity = tokens always suffices.
void planExpertRows(const int *chosen, int tokens, int k, int experts, int capacity, int *slotRow, int *rowSlot,
                    cudaStream_t stream);
// xe[row] = a[token of rowSlot[row]], zero for unused rows (rows = E*capacity).
template <typename AT>
void gatherExpertInputs(const AT *a, const int *rowSlot, int k, AT *xe, size_t rows, size_t hidden,
                        cudaStream_t stream);
// out[t] = a[t] + sum_j gates[t,j] * f[slotRow[t,j]], ascending j, in fp32.
template <typename AT>
void combineExpertOutputs(const AT *a, const float *f, const int *slotRow, const float *gates, AT *out, int tokens,
                          int k, size_t hidden, cudaStream_t stream);
// dGates[t,j] = dy[t] . f[slotRow[t,j]].
template <typename AT>
void gateGradients(const AT *dy, const float *f, const int *slotRow, float *dGates, int tokens, int k,
                   size_t hidden, cudaStream_t stream);
// dm[row] = gates[s] * dy[token of s] for s = rowSlot[row], zero for unused rows.
template <typename AT>
void scatterExpertGradients(const AT *dy, const float *gates, const int *rowSlot, int k, AT *dm, size_t rows,
                            size_t hidden, cudaStream_t stream);
// da[t] += sum_j dx[slotRow[t,j]], ascending j.
void addExpertInputGradients(const float *dx, const int *slotRow, float *da, int tokens, int k, size_t hidden,
                             cudaStream_t stream);
// dz[t,e] = g_tj (dg_tj - sum_j' g_tj' dg_tj') for e = chosen[t,j], 0 for the
// other experts (Router.h). dz: tokens x E.
template <typename AT>
void routerLogitGradients(const float *gates, const float *dGates, const int *chosen, AT *dz, int tokens,
                          int experts, int k, cudaStream_t stream);

// loss += w sum((y - t)^2) / n, summed in fp64 in a fixed order (one atomicAdd
// per call into *loss); dy = (2 w / n) (y - t). w: the micro-batch's loss
// weight (1 without sizes).
template <typename AT>
void mseLossGrad(const AT *y, const AT *target, AT *dy, double *loss, size_t n, cudaStream_t stream,
                 double weight = 1.0);

} // namespace pipert::cuda
