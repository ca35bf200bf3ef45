#include "HostCuda.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

// The opaque handle types, given bodies here.
struct CUstream_st { int unused; };
struct CUevent_st { int unused; };
struct CUgraph_st { std::vector<std::function<void()>> work; };
struct CUgraphExec_st { std::vector<std::function<void()>> work; };
struct CUmemPoolHandle_st { int unused; };
struct cublasContext { int unused; };

namespace pipert::hostcuda {

namespace {
bool capturing = false;
std::vector<std::function<void()>> captured;
CUmemPoolHandle_st defaultPool;
} // namespace

void enqueue(std::function<void()> work) {
  if (capturing)
    captured.push_back(std::move(work));
  else
    work();
}

} // namespace pipert::hostcuda

using pipert::hostcuda::enqueue;

extern "C" {

cudaError_t cudaGetDeviceCount(int *count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int) {
  std::memset(prop, 0, sizeof *prop);
  std::strcpy(prop->name, "host simulation");
  return cudaSuccess;
}
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int) {
  *pool = &pipert::hostcuda::defaultPool;
  return cudaSuccess;
}
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void *) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
cudaError_t cudaGetLastError() { return cudaSuccess; }
const char *cudaGetErrorName(cudaError_t) { return "cudaErrorHostSimulation"; }
const char *cudaGetErrorString(cudaError_t) { return "host simulation error"; }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned) {
  *stream = new CUstream_st();
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventCreate(cudaEvent_t *event) {
  *event = new CUevent_st();
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned) { return cudaEventCreate(event); }
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned) { return cudaSuccess; }
cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t, cudaEvent_t) {
  *ms = 0;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **ptr, size_t size) {
  *ptr = std::calloc(1, size ? size : 1);
  return *ptr ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void *ptr) {
  std::free(ptr);
  return cudaSuccess;
}
// Allocation happens when enqueued (also under capture: the graph keeps it);
// a free under capture is dropped, so replays reuse the memory.
cudaError_t cudaMallocAsync(void **ptr, size_t size, cudaStream_t) { return cudaMalloc(ptr, size); }
cudaError_t cudaFreeAsync(void *ptr, cudaStream_t) {
  if (!pipert::hostcuda::capturing)
    std::free(ptr);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, cudaMemcpyKind) {
  std::memmove(dst, src, count);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, cudaMemcpyKind,
                            cudaStream_t) {
  enqueue([=] { std::memmove(dst, src, count); });
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *ptr, int value, size_t count, cudaStream_t) {
  enqueue([=] { std::memset(ptr, value, count); });
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) {
  if (pipert::hostcuda::capturing)
    return cudaErrorIllegalState;
  pipert::hostcuda::capturing = true;
  pipert::hostcuda::captured.clear();
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *graph) {
  pipert::hostcuda::capturing = false;
  *graph = new CUgraph_st{std::move(pipert::hostcuda::captured)};
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long) {
  *exec = new CUgraphExec_st{graph->work};
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete graph;
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t) {
  for (auto &work : exec->work)
    work();
  return cudaSuccess;
}

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle) {
  *handle = new cublasContext();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t, void *, size_t) { return CUBLAS_STATUS_SUCCESS; }
const char *cublasGetStatusName(cublasStatus_t) { return "CUBLAS_STATUS_HOST_SIMULATION"; }
const char *cublasGetStatusString(cublasStatus_t) { return "host simulation"; }

// NCCL: not simulated; every call fails with a clear reason.
ncclResult_t ncclGetUniqueId(ncclUniqueId *) { return ncclInvalidUsage; }
ncclResult_t ncclCommInitRank(ncclComm_t *, int, ncclUniqueId, int) { return ncclInvalidUsage; }
ncclResult_t ncclCommSplit(ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *) { return ncclInvalidUsage; }
ncclResult_t ncclCommDestroy(ncclComm_t) { return ncclInvalidUsage; }
ncclResult_t ncclCommAbort(ncclComm_t) { return ncclInvalidUsage; }
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t *) { return ncclInvalidUsage; }
ncclResult_t ncclGroupStart() { return ncclInvalidUsage; }
ncclResult_t ncclGroupEnd() { return ncclInvalidUsage; }
ncclResult_t ncclSend(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) { return ncclInvalidUsage; }
ncclResult_t ncclRecv(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) { return ncclInvalidUsage; }
ncclResult_t ncclAllReduce(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                           cudaStream_t) { return ncclInvalidUsage; }
const char *ncclGetErrorString(ncclResult_t) { return "NCCL is not part of the host simulation"; }
const char *ncclGetLastError(ncclComm_t) { return ""; }

} // extern "C"
