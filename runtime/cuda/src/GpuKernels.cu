// The kernels and the cuBLAS GEMM wrapper of GpuKernels.cuh. Element-wise
// kernels use grid-stride loops; reductions use a fixed order inside a block
// (warp shuffles, shared-memory trees, block sums added in block order), so
// results do not depend on timing. Launches go through PIPERT_LAUNCH
// (KernelLaunch.cuh), so the file also compiles under the host kernel emulation
// of tests/cuda_emu.
#include "GpuKernels.cuh"
#include "KernelLaunch.cuh"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace pipert::cuda {

namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 1u << 20; // grid-stride loops cover the rest

unsigned blocksFor(size_t n) {
  return static_cast<unsigned>(std::min<size_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
}

__device__ __forceinline__ float load(float x) { return x; }
__device__ __forceinline__ float load(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T store(float x);
template <> __device__ __forceinline__ float store<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 store<__nv_bfloat16>(float x) { return __float2bfloat16(x); }

// The constants of Kernels.cpp (tanh approximation of GELU), in fp32.
constexpr float kGeluC = static_cast<float>(0.7978845608028654); // sqrt(2 / pi)
constexpr float kGeluA = static_cast<float>(0.044715);
constexpr float kGeluA3 = static_cast<float>(3 * 0.044715);

__device__ __forceinline__ float geluValue(float x) {
  const float inner = kGeluC * (x + kGeluA * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}

__device__ __forceinline__ float geluSlope(float x) {
  const float inner = kGeluC * (x + kGeluA * x * x * x);
  const float t = tanhf(inner);
  const float dInner = kGeluC * (1.0f + kGeluA3 * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * dInner;
}

#define PIPERT_GRID_STRIDE(i, n)                                                                   \
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);             \
       i += static_cast<size_t>(gridDim.x) * blockDim.x)

// ---- element-wise ----

template <typename In, typename Out> __global__ void convertKernel(const In *in, Out *out, size_t n) {
  PIPERT_GRID_STRIDE(i, n) out[i] = store<Out>(load(in[i]));
}

template <typename AT>
__global__ void biasGeluKernel(float *u, const float *b, AT *v, size_t rowsPerGroup, size_t cols, size_t n) {
  PIPERT_GRID_STRIDE(i, n) {
    const size_t row = i / cols, col = i % cols;
    const float x = u[i] + b[(row / rowsPerGroup) * cols + col];
    u[i] = x;
    v[i] = store<AT>(geluValue(x));
  }
}

__global__ void addBiasKernel(float *y, const float *b, size_t rowsPerGroup, size_t cols, size_t n) {
  PIPERT_GRID_STRIDE(i, n) {
    const size_t row = i / cols, col = i % cols;
    y[i] += b[(row / rowsPerGroup) * cols + col];
  }
}

template <typename AT> __global__ void geluBackwardKernel(const float *u, const float *dv, AT *du, size_t n) {
  PIPERT_GRID_STRIDE(i, n) du[i] = store<AT>(dv[i] * geluSlope(u[i]));
}

template <typename AT> __global__ void residualAddKernel(const AT *a, const float *m, AT *out, size_t n) {
  PIPERT_GRID_STRIDE(i, n) out[i] = store<AT>(load(a[i]) + m[i]);
}

// ---- column sums: block (32 columns) x (8 row lanes), grid.y = group ----

constexpr int kSumCols = 32, kSumRows = 8;

template <typename AT>
__global__ void addColumnSumsKernel(const AT *x, float *grad, size_t rows, size_t cols) {
  __shared__ float partial[kSumRows][kSumCols + 1];
  const size_t group = blockIdx.y;
  const size_t col = static_cast<size_t>(blockIdx.x) * kSumCols + threadIdx.x;
  float sum = 0.0f;
  if (col < cols)
    for (size_t r = threadIdx.y; r < rows; r += kSumRows)
      sum += load(x[(group * rows + r) * cols + col]);
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    float total = 0.0f;
    for (int i = 0; i < kSumRows; ++i)
      total += partial[i][threadIdx.x];
    grad[group * cols + col] += total; // this micro-batch's sum, then one add (as Linear.cpp)
  }
}

// ---- router ----

__device__ __forceinline__ float expShifted(float z, float maxValue) {
  return (isinf(z) && z < 0.0f) ? 0.0f : expf(z - maxValue); // masked logits get probability 0
}

// One thread per token. Probabilities are recomputed rather than stored (E is
// arbitrary); the same expression gives the same bits each time.
__global__ void routeTopKKernel(const float *logits, int tokens, int experts, int k, int *chosen, float *gates) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= tokens)
    return;
  const float *z = logits + static_cast<size_t>(t) * experts;
  float maxValue = -INFINITY;
  for (int e = 0; e < experts; ++e)
    maxValue = fmaxf(maxValue, z[e]);
  float sum = 0.0f;
  for (int e = 0; e < experts; ++e)
    sum += expShifted(z[e], maxValue);
  int *picked = chosen + static_cast<size_t>(t) * k;
  float *g = gates + static_cast<size_t>(t) * k;
  // k passes of "largest not yet picked"; strict > while scanning upwards gives
  // ties to the lower index, the order of Kernels.cpp's stable sort.
  for (int j = 0; j < k; ++j) {
    int best = -1;
    float bestP = 0.0f;
    for (int e = 0; e < experts; ++e) {
      bool taken = false;
      for (int i = 0; i < j; ++i)
        taken = taken || picked[i] == e;
      if (taken)
        continue;
      const float p = expShifted(z[e], maxValue) / sum;
      if (best < 0 || p > bestP) {
        best = e;
        bestP = p;
      }
    }
    picked[j] = best;
    g[j] = bestP;
  }
  float chosenSum = 0.0f;
  for (int j = 0; j < k; ++j)
    chosenSum += g[j];
  for (int j = 0; j < k; ++j)
    g[j] /= chosenSum;
}

// Exclusive prefix sum of `flag` over the block; `total` gets the block's sum.
// Every thread of the block must call it.
__device__ int blockExclusiveScan(int flag, int &total) {
  __shared__ int warpTotals[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
  int x = flag;
  for (int offset = 1; offset < 32; offset <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, x, offset);
    if (lane >= offset)
      x += y;
  }
  if (lane == 31)
    warpTotals[warp] = x;
  __syncthreads();
  if (warp == 0) {
    int w = lane < warps ? warpTotals[lane] : 0;
    for (int offset = 1; offset < 32; offset <<= 1) {
      const int y = __shfl_up_sync(0xffffffffu, w, offset);
      if (lane >= offset)
        w += y;
    }
    warpTotals[lane] = w;
  }
  __syncthreads();
  const int before = warp > 0 ? warpTotals[warp - 1] : 0;
  total = warpTotals[warps - 1];
  __syncthreads(); // warpTotals is reused by the next call
  return before + x - flag;
}

constexpr int kPlanThreads = 256; // a multiple of 32 (full warps for the scan)

// One block per expert: scan the tokens in chunks; a token holds expert e in
// at most one of its k choices.
__global__ void planExpertRowsKernel(const int *chosen, int tokens, int k, int capacity, int *slotRow,
                                     int *rowSlot) {
  const int e = blockIdx.x;
  const size_t base = static_cast<size_t>(e) * capacity;
  int offset = 0;
  for (int first = 0; first < tokens; first += blockDim.x) {
    const int t = first + static_cast<int>(threadIdx.x);
    int slot = -1;
    if (t < tokens)
      for (int j = 0; j < k; ++j)
        if (chosen[static_cast<size_t>(t) * k + j] == e) {
          slot = t * k + j;
          break;
        }
    int chunkTotal = 0;
    const int position = offset + blockExclusiveScan(slot >= 0 ? 1 : 0, chunkTotal);
    if (slot >= 0) {
      slotRow[slot] = static_cast<int>(base) + position;
      rowSlot[base + position] = slot;
    }
    offset += chunkTotal;
  }
  for (int r = offset + static_cast<int>(threadIdx.x); r < capacity; r += blockDim.x)
    rowSlot[base + r] = -1;
}

// ---- token movement ----

template <typename AT>
__global__ void gatherExpertInputsKernel(const AT *a, const int *rowSlot, int k, AT *xe, size_t hidden, size_t n) {
  PIPERT_GRID_STRIDE(i, n) {
    const int slot = rowSlot[i / hidden];
    xe[i] = slot < 0 ? store<AT>(0.0f) : a[static_cast<size_t>(slot / k) * hidden + i % hidden];
  }
}

template <typename AT>
__global__ void combineExpertOutputsKernel(const AT *a, const float *f, const int *slotRow, const float *gates,
                                           AT *out, int k, size_t hidden, size_t n) {
  PIPERT_GRID_STRIDE(i, n) {
    const size_t t = i / hidden, c = i % hidden;
    float acc = load(a[i]);
    for (int j = 0; j < k; ++j) {
      const size_t slot = t * k + j;
      acc += gates[slot] * f[static_cast<size_t>(slotRow[slot]) * hidden + c];
    }
    out[i] = store<AT>(acc);
  }
}

// One warp per slot.
template <typename AT>
__global__ void gateGradientsKernel(const AT *dy, const float *f, const int *slotRow, float *dGates, int slots,
                                    int k, size_t hidden) {
  const int slot = static_cast<int>((static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32);
  const int lane = threadIdx.x & 31;
  if (slot >= slots) // uniform across the warp
    return;
  const AT *dyRow = dy + static_cast<size_t>(slot / k) * hidden;
  const float *fRow = f + static_cast<size_t>(slotRow[slot]) * hidden;
  float acc = 0.0f;
  for (size_t c = lane; c < hidden; c += 32)
    acc += load(dyRow[c]) * fRow[c];
  for (int offset = 16; offset > 0; offset >>= 1)
    acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  if (lane == 0)
    dGates[slot] = acc;
}

template <typename AT>
__global__ void scatterExpertGradientsKernel(const AT *dy, const float *gates, const int *rowSlot, int k, AT *dm,
                                             size_t hidden, size_t n) {
  PIPERT_GRID_STRIDE(i, n) {
    const int slot = rowSlot[i / hidden];
    dm[i] = slot < 0 ? store<AT>(0.0f)
                     : store<AT>(gates[slot] * load(dy[static_cast<size_t>(slot / k) * hidden + i % hidden]));
  }
}

__global__ void addExpertInputGradientsKernel(const float *dx, const int *slotRow, float *da, int k, size_t hidden,
                                              size_t n) {
  PIPERT_GRID_STRIDE(i, n) {
    const size_t t = i / hidden, c = i % hidden;
    float acc = da[i];
    for (int j = 0; j < k; ++j)
      acc += dx[static_cast<size_t>(slotRow[t * k + j]) * hidden + c];
    da[i] = acc;
  }
}

template <typename AT>
__global__ void routerLogitGradientsKernel(const float *gates, const float *dGates, const int *chosen, AT *dz,
                                           int tokens, int experts, int k) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= tokens)
    return;
  const size_t first = static_cast<size_t>(t) * k;
  float dot = 0.0f;
  for (int j = 0; j < k; ++j)
    dot += gates[first + j] * dGates[first + j];
  AT *row = dz + static_cast<size_t>(t) * experts;
  for (int e = 0; e < experts; ++e)
    row[e] = store<AT>(0.0f);
  for (int j = 0; j < k; ++j)
    row[chosen[first + j]] = store<AT>(gates[first + j] * (dGates[first + j] - dot));
}

// ---- loss ----

constexpr unsigned kLossBlocks = 1024;

// Sums a block's share of (y - t)^2 in fp64 into partials[block], and writes dy.
// The sum of every thread's `value` over a block of kThreads threads, added in
// a fixed tree order (the same bits every run); every thread gets it. Every
// thread of the block must call it.
__device__ double blockSum(double value) {
  __shared__ double partial[kThreads];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half >>= 1) {
    if (static_cast<int>(threadIdx.x) < half)
      partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  return partial[0];
}

template <typename AT>
__global__ void mseLossGradKernel(const AT *y, const AT *target, AT *dy, double *partials, size_t n, float scale) {
  double acc = 0.0;
  PIPERT_GRID_STRIDE(i, n) {
    const float yi = load(y[i]), ti = load(target[i]);
    const double d = static_cast<double>(yi) - static_cast<double>(ti);
    acc += d * d;
    dy[i] = store<AT>(scale * (yi - ti));
  }
  const double sum = blockSum(acc);
  if (threadIdx.x == 0)
    partials[blockIdx.x] = sum;
}

// One block: the block sums in a fixed order, then one add into the loss. A
// rank's stream program orders its loss calls (a pair forks from and joins the
// compute stream), so the adds happen in the same order every step and graph
// replays match eager steps bit for bit; the atomic only keeps a concurrent
// add, should a program ever allow one, from being lost.
__global__ void addLossKernel(const double *partials, unsigned count, double *loss, double n, double weight) {
  double acc = 0.0;
  for (unsigned i = threadIdx.x; i < count; i += kThreads)
    acc += partials[i];
  const double sum = blockSum(acc);
  if (threadIdx.x == 0)
    atomicAdd(loss, sum * weight / n); // weight 1: exactly sum / n
}

} // namespace

// ---- host side ----

void gemm(cublasHandle_t blas, cudaDataType_t abType, int m, int n, int k, GemmOperand a, GemmOperand b,
          float beta, float *c, long long strideC, int batch) {
  // cuBLAS is column-major: a row-major C (m x n) is a column-major C^T, and
  // C^T = op(B)^T op(A)^T, so B goes first and the roles of m and n swap.
  // CUBLAS_COMPUTE_32F: fp32 products and sums, no TF32 (the handle's math
  // mode must stay at its default, which does not allow TF32 either).
  if (!blas)
    throw std::invalid_argument("GPU GEMM: the part's Launch has no cuBLAS handle");
  const float alpha = 1.0f;
  const cublasOperation_t opA = a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opB = b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int lda = a.transposed ? m : k; // row length of A's storage
  const int ldb = b.transposed ? k : n;
  if (batch == 1)
    PIPERT_CUBLAS(cublasGemmEx(blas, opB, opA, n, m, k, &alpha, b.data, abType, ldb, a.data, abType, lda, &beta, c,
                               CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  else
    PIPERT_CUBLAS(cublasGemmStridedBatchedEx(blas, opB, opA, n, m, k, &alpha, b.data, abType, ldb, b.stride, a.data,
                                             abType, lda, a.stride, &beta, c, CUDA_R_32F, n, strideC, batch,
                                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

template <typename In, typename Out> void convert(const In *in, Out *out, size_t n, cudaStream_t stream) {
  if (n == 0)
    return;
  PIPERT_LAUNCH(convertKernel, blocksFor(n), kThreads, stream, in, out, n);
  PIPERT_CUDA_LAUNCHED();
}

template <typename AT>
void biasGelu(float *u, const float *b, AT *v, size_t rowsPerGroup, size_t cols, int groups, cudaStream_t stream) {
  const size_t n = static_cast<size_t>(groups) * rowsPerGroup * cols;
  if (n == 0)
    return;
  PIPERT_LAUNCH(biasGeluKernel, blocksFor(n), kThreads, stream, u, b, v, rowsPerGroup, cols, n);
  PIPERT_CUDA_LAUNCHED();
}

void addBias(float *y, const float *b, size_t rowsPerGroup, size_t cols, int groups, cudaStream_t stream) {
  const size_t n = static_cast<size_t>(groups) * rowsPerGroup * cols;
  if (n == 0)
    return;
  PIPERT_LAUNCH(addBiasKernel, blocksFor(n), kThreads, stream, y, b, rowsPerGroup, cols, n);
  PIPERT_CUDA_LAUNCHED();
}

template <typename AT> void geluBackward(const float *u, const float *dv, AT *du, size_t n, cudaStream_t stream) {
  if (n == 0)
    return;
  PIPERT_LAUNCH(geluBackwardKernel, blocksFor(n), kThreads, stream, u, dv, du, n);
  PIPERT_CUDA_LAUNCHED();
}

template <typename AT>
void addColumnSums(const AT *x, float *grad, size_t rowsPerGroup, size_t cols, int groups, cudaStream_t stream) {
  if (cols == 0 || groups == 0)
    return;
  const dim3 grid(static_cast<unsigned>((cols + kSumCols - 1) / kSumCols), static_cast<unsigned>(groups));
  PIPERT_LAUNCH(addColumnSumsKernel, grid, dim3(kSumCols, kSumRows), stream, x, grad, rowsPerGroup, cols);
  PIPERT_CUDA_LAUNCHED();
}

template <typename AT> void residualAdd(const AT *a, const float *m, AT *out, size_t n, cudaStream_t stream) {
  if (n == 0)
    return;
  PIPERT_LAUNCH(residualAddKernel, blocksFor(n), kThreads, stream, a, m, out, n);
  PIPERT_CUDA_LAUNCHED();
}

void routeTopK(const float *logits, int tokens, int experts, int k, int *chosen, float *gates, cudaStream_t stream) {
  if (tokens == 0)
    return;
  PIPERT_LAUNCH(routeTopKKernel, (tokens + 127) / 128, 128, stream, logits, tokens, experts, k, chosen, gates);
  PIPERT_CUDA_LAUNCHED();
}

void planExpertRows(const int *chosen, int tokens, int k, int experts, int capacity, int *slotRow, int *rowSlot,
                    cudaStream_t stream) {
  if (experts == 0)
    return;
  PIPERT_LAUNCH(planExpertRowsKernel, experts, kPlanThreads, stream, chosen, tokens, k, capacity, slotRow,
                rowSlot);
  PIPERT_CUDA_LAUNCHED();
}

template <typename AT>
void gatherExpertInputs(const AT *a, const int *rowSlot, int k, AT *xe, size_t rows, size_t hidden,
                        cudaStream_t stream) {
  const size_t n = rows * hidden;
  if (n == 0)
    return;
  PIPERT_LAUNCH(gatherExpertInputsKernel, blocksFor(n), kThreads, stream, a, rowSlot, k, xe, hidden, n);
  PIPERT_CUDA_LAUNCHED();
}

template <typename AT>
void combineExpertOutputs(const AT *a, const float *f, const int *slotRow, const float *gates, AT *out, int tokens,
                          int k, size_t hidden, cudaStream_t stream) {
  const size_t n = static_cast<size_t>(tokens) * hidden;
  if (n == 0)
    return;
  PIPERT_LAUNCH(combineExpertOutputsKernel, blocksFor(n), kThreads, stream, a, f, slotRow, gates, out, k, hidden,
                n);
  PIPERT_CUDA_LAUNCHED();
}

template <typename AT>
void gateGradients(const AT *dy, const float *f, const int *slotRow, float *dGates, int tokens, int k,
                   size_t hidden, cudaStream_t stream) {
  const int slots = tokens * k;
  if (slots == 0)
    return;
  constexpr int warpsPerBlock = kThreads / 32;
  const unsigned blocks = static_cast<unsigned>((slots + warpsPerBlock - 1) / warpsPerBlock);
  PIPERT_LAUNCH(gateGradientsKernel, blocks, kThreads, stream, dy, f, slotRow, dGates, slots, k, hidden);
  PIPERT_CUDA_LAUNCHED();
}

template <typename AT>
void scatterExpertGradients(const AT *dy, const float *gates, const int *rowSlot, int k, AT *dm, size_t rows,
                            size_t hidden, cudaStream_t stream) {
  const size_t n = rows * hidden;
  if (n == 0)
    return;
  PIPERT_LAUNCH(scatterExpertGradientsKernel, blocksFor(n), kThreads, stream, dy, gates, rowSlot, k, dm, hidden,
                n);
  PIPERT_CUDA_LAUNCHED();
}

void addExpertInputGradients(const float *dx, const int *slotRow, float *da, int tokens, int k, size_t hidden,
                             cudaStream_t stream) {
  const size_t n = static_cast<size_t>(tokens) * hidden;
  if (n == 0)
    return;
  PIPERT_LAUNCH(addExpertInputGradientsKernel, blocksFor(n), kThreads, stream, dx, slotRow, da, k, hidden, n);
  PIPERT_CUDA_LAUNCHED();
}

template <typename AT>
void routerLogitGradients(const float *gates, const float *dGates, const int *chosen, AT *dz, int tokens,
                          int experts, int k, cudaStream_t stream) {
  if (tokens == 0)
    return;
  PIPERT_LAUNCH(routerLogitGradientsKernel, (tokens + 127) / 128, 128, stream, gates, dGates, chosen, dz, tokens,
                experts, k);
  PIPERT_CUDA_LAUNCHED();
}

template <typename AT>
void mseLossGrad(const AT *y, const AT *target, AT *dy, double *loss, size_t n, cudaStream_t stream,
                 double weight) {
  if (n == 0)
    return;
  // The gradient's scale as Loss.cpp computes it: 2/n in double (times the
  // micro-batch's loss weight, exact for 1), then rounded.
  const float scale = static_cast<float>(2.0 * weight / static_cast<double>(n));
  // Block sums go through a scratch array rather than atomics, so the loss
  // does not depend on block timing (graph replay gives the eager bits).
  const unsigned blocks = std::min(blocksFor(n), kLossBlocks);
  double *partials = allocOn<double>(blocks, stream);
  PIPERT_LAUNCH(mseLossGradKernel, blocks, kThreads, stream, y, target, dy, partials, n, scale);
  PIPERT_CUDA_LAUNCHED();
  PIPERT_LAUNCH(addLossKernel, 1, kThreads, stream, partials, blocks, loss, static_cast<double>(n), weight);
  PIPERT_CUDA_LAUNCHED();
  freeOn(partials, stream);
}

// ---- instantiations ----

#define PIPERT_CONVERT(In, Out) template void convert<In, Out>(const In *, Out *, size_t, cudaStream_t);
PIPERT_CONVERT(float, float)
PIPERT_CONVERT(float, __nv_bfloat16)
PIPERT_CONVERT(__nv_bfloat16, float)
PIPERT_CONVERT(__nv_bfloat16, __nv_bfloat16)
#undef PIPERT_CONVERT

#define PIPERT_KERNELS(AT)                                                                         \
  template void biasGelu<AT>(float *, const float *, AT *, size_t, size_t, int, cudaStream_t);     \
  template void geluBackward<AT>(const float *, const float *, AT *, size_t, cudaStream_t);        \
  template void addColumnSums<AT>(const AT *, float *, size_t, size_t, int, cudaStream_t);         \
  template void residualAdd<AT>(const AT *, const float *, AT *, size_t, cudaStream_t);            \
  template void gatherExpertInputs<AT>(const AT *, const int *, int, AT *, size_t, size_t, cudaStream_t); \
  template void combineExpertOutputs<AT>(const AT *, const float *, const int *, const float *, AT *, int, int, \
                                         size_t, cudaStream_t);                                    \
  template void gateGradients<AT>(const AT *, const float *, const int *, float *, int, int, size_t, cudaStream_t); \
  template void scatterExpertGradients<AT>(const AT *, const float *, const int *, int, AT *, size_t, size_t, \
                                           cudaStream_t);                                          \
  template void routerLogitGradients<AT>(const float *, const float *, const int *, AT *, int, int, int, \
                                         cudaStream_t);                                            \
  template void mseLossGrad<AT>(const AT *, const AT *, AT *, double *, size_t, cudaStream_t, double);
PIPERT_KERNELS(float)
PIPERT_KERNELS(__nv_bfloat16)
#undef PIPERT_KERNELS

} // namespace pipert::cuda
