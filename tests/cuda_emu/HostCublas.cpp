// A reference cuBLAS GEMM for the emulated GPU stages: cublasGemmEx and
// cublasGemmStridedBatchedEx in exactly the modes GpuKernels.cu's gemm() uses
// (column-major, op N or T, fp32 or bf16 A and B, fp32 C, CUBLAS_COMPUTE_32F:
// fp32 products summed in fp32, no TF32), as stream operations through
// hostcuda::enqueue so graph capture records them. Anything else is refused
// with CUBLAS_STATUS_NOT_SUPPORTED rather than computed differently, and bad
// sizes get CUBLAS_STATUS_INVALID_VALUE as from cuBLAS. alpha and beta are
// host pointers (the default pointer mode), read at the call.
#include "HostCuda.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <algorithm>

namespace {

struct Operand {
  const char *data;
  cudaDataType type;
  bool transposed;
  long long ld, stride; // stride in elements
};

size_t elementBytes(cudaDataType type) { return type == CUDA_R_32F ? sizeof(float) : sizeof(__nv_bfloat16); }

float element(const Operand &x, long long batch, long long index) {
  const char *base = x.data + size_t(batch * x.stride + index) * elementBytes(x.type);
  if (x.type == CUDA_R_32F)
    return *reinterpret_cast<const float *>(base);
  return __bfloat162float(*reinterpret_cast<const __nv_bfloat16 *>(base));
}

// op(X)[row, col] of column-major X with leading dimension ld.
float at(const Operand &x, long long batch, long long row, long long col) {
  return x.transposed ? element(x, batch, col + row * x.ld) : element(x, batch, row + col * x.ld);
}

// C[b] = alpha op(A[b]) op(B[b]) + beta C[b] for every batch entry b; with
// beta == 0 C is only written (cuBLAS does not read it: NaN there stays out).
void gemm(int m, int n, int k, float alpha, Operand a, Operand b, float beta, float *c, long long ldc,
          long long strideC, int batch) {
  for (long long e = 0; e < batch; ++e)
    for (long long j = 0; j < n; ++j)
      for (long long i = 0; i < m; ++i) {
        float sum = 0.0f;
        for (long long p = 0; p < k; ++p)
          sum += at(a, e, i, p) * at(b, e, p, j);
        float &out = c[e * strideC + i + j * ldc];
        out = beta == 0.0f ? alpha * sum : alpha * sum + beta * out;
      }
}

cublasStatus_t enqueueGemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const void *alpha, const void *A, cudaDataType Atype, long long lda,
                           long long strideA, const void *B, cudaDataType Btype, long long ldb, long long strideB,
                           const void *beta, void *C, cudaDataType Ctype, long long ldc, long long strideC, int batch,
                           cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  if (!handle)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto supportedOp = [](cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T; };
  if (!supportedOp(transa) || !supportedOp(transb) || Atype != Btype ||
      (Atype != CUDA_R_32F && Atype != CUDA_R_16BF) || Ctype != CUDA_R_32F || computeType != CUBLAS_COMPUTE_32F ||
      algo != CUBLAS_GEMM_DEFAULT)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const long long rowsA = transa == CUBLAS_OP_N ? m : k, rowsB = transb == CUBLAS_OP_N ? k : n;
  if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < std::max(1LL, rowsA) || ldb < std::max(1LL, rowsB) ||
      ldc < std::max(1, m) || !alpha || !beta)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0 || batch == 0)
    return CUBLAS_STATUS_SUCCESS;
  const Operand a{static_cast<const char *>(A), Atype, transa == CUBLAS_OP_T, lda, strideA};
  const Operand b{static_cast<const char *>(B), Btype, transb == CUBLAS_OP_T, ldb, strideB};
  const float alphaValue = *static_cast<const float *>(alpha), betaValue = *static_cast<const float *>(beta);
  float *c = static_cast<float *>(C);
  pipert::hostcuda::enqueue([=] { gemm(m, n, k, alphaValue, a, b, betaValue, c, ldc, strideC, batch); });
  return CUBLAS_STATUS_SUCCESS;
}

} // namespace

extern "C" {

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void *alpha, const void *A, cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return enqueueGemm(handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta, C, Ctype, ldc,
                     0, 1, computeType, algo);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void *alpha, const void *A, cudaDataType Atype,
                                          int lda, long long strideA, const void *B, cudaDataType Btype, int ldb,
                                          long long strideB, const void *beta, void *C, cudaDataType Ctype, int ldc,
                                          long long strideC, int batchCount, cublasComputeType_t computeType,
                                          cublasGemmAlgo_t algo) {
  return enqueueGemm(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C,
                     Ctype, ldc, strideC, batchCount, computeType, algo);
}

} // extern "C"
