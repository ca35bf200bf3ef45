// Checked CUDA, cuBLAS and NCCL calls. Every call in the CUDA runtime goes
// through one of these macros: a failure throws CudaError naming the call, the
// file and line, and (for NCCL) ncclGetLastError's detail, so a failing rank
// says where and why instead of hanging or printing an error code.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace pipert::cuda {

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throwCudaError(const char *call, cudaError_t status, const char *file, int line);
[[noreturn]] void throwCublasError(const char *call, cublasStatus_t status, const char *file, int line);
[[noreturn]] void throwNcclError(const char *call, ncclResult_t status, ncclComm_t comm,
                                 const char *file, int line);

} // namespace pipert::cuda

#define PIPERT_CUDA(call)                                                                         \
  do {                                                                                            \
    cudaError_t pipert_status_ = (call);                                                          \
    if (pipert_status_ != cudaSuccess)                                                            \
      ::pipert::cuda::throwCudaError(#call, pipert_status_, __FILE__, __LINE__);                  \
  } while (0)

#define PIPERT_CUBLAS(call)                                                                       \
  do {                                                                                            \
    cublasStatus_t pipert_status_ = (call);                                                       \
    if (pipert_status_ != CUBLAS_STATUS_SUCCESS)                                                  \
      ::pipert::cuda::throwCublasError(#call, pipert_status_, __FILE__, __LINE__);                \
  } while (0)

// `comm` may be nullptr when the call has no communicator yet.
#define PIPERT_NCCL(call, comm)                                                                   \
  do {                                                                                            \
    ncclResult_t pipert_status_ = (call);                                                         \
    if (pipert_status_ != ncclSuccess && pipert_status_ != ncclInProgress)                        \
      ::pipert::cuda::throwNcclError(#call, pipert_status_, (comm), __FILE__, __LINE__);          \
  } while (0)

// After a kernel launch: a bad configuration is reported at the launch site.
#define PIPERT_CUDA_LAUNCHED() PIPERT_CUDA(cudaGetLastError())
