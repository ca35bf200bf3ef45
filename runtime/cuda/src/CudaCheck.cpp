#include "pipert/cuda/CudaCheck.h"

namespace pipert::cuda {

namespace {
std::string where(const char *call, const char *file, int line) {
  return std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: ";
}
} // namespace

void throwCudaError(const char *call, cudaError_t status, const char *file, int line) {
  throw CudaError(where(call, file, line) + cudaGetErrorName(status) + " (" +
                  cudaGetErrorString(status) + ")");
}

void throwCublasError(const char *call, cublasStatus_t status, const char *file, int line) {
  throw CudaError(where(call, file, line) + cublasGetStatusName(status) + " (" +
                  cublasGetStatusString(status) + ")");
}

void throwNcclError(const char *call, ncclResult_t status, ncclComm_t comm, const char *file,
                    int line) {
  std::string detail = comm ? ncclGetLastError(comm) : ncclGetLastError(nullptr);
  throw CudaError(where(call, file, line) + ncclGetErrorString(status) +
                  (detail.empty() ? std::string() : ": " + detail));
}

} // namespace pipert::cuda
