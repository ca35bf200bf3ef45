#include "HostCuda.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <unordered_map>
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
cudaError_t lastError = cudaSuccess;
int fillByte = 0;
std::unordered_map<void *, size_t> streamOrdered; // pointer -> bytes
LiveHandles live;
std::unordered_map<void *, bool> mallocked; // cudaMalloc'd, not freed yet
long failAt = 0;                            // creations until one fails; 0: never
std::map<const char *, size_t> device;      // every live device allocation: start -> bytes
std::map<const char *, size_t> pinned;      // live pinned host allocations: start -> bytes
CopyCounts copies;

// Whether p lies inside one of `allocations` (start -> bytes).
bool inside(const std::map<const char *, size_t> &allocations, const void *p) {
  const char *c = static_cast<const char *>(p);
  auto it = allocations.upper_bound(c);
  if (it == allocations.begin())
    return false;
  --it;
  return c < it->first + std::max<size_t>(it->second, 1);
}

// Whether a copy of `kind` between these pointers is one CUDA would run (and
// capture, while capturing); counts it when it is. The device side must not be
// pinned host memory, the host side not a device allocation (memory the
// simulated stages own, such as their gradients, is neither: it passes as
// either side).
cudaError_t checkCopy(void *dst, const void *src, size_t count, cudaMemcpyKind kind) {
  auto isDevice = [](const void *p) { return inside(device, p); };
  auto isPinned = [](const void *p) { return inside(pinned, p); };
  switch (kind) {
  case cudaMemcpyDeviceToHost:
    if (isPinned(src) || isDevice(dst))
      return cudaErrorInvalidValue;
    if (capturing && !isPinned(dst))
      return cudaErrorStreamCaptureUnsupported;
    ++copies.deviceToHost;
    copies.bytesToHost += count;
    return cudaSuccess;
  case cudaMemcpyHostToDevice:
    if (isDevice(src) || isPinned(dst))
      return cudaErrorInvalidValue;
    if (capturing && !isPinned(src))
      return cudaErrorStreamCaptureUnsupported;
    ++copies.hostToDevice;
    copies.bytesToDevice += count;
    return cudaSuccess;
  case cudaMemcpyDeviceToDevice:
    if (isPinned(src) || isPinned(dst))
      return cudaErrorInvalidValue;
    ++copies.deviceToDevice;
    return cudaSuccess;
  default: // HostToHost, Default: what this simulation is not asked for
    return cudaErrorInvalidValue;
  }
}

// Whether this creation is the one failCreation named.
bool creationFails() { return failAt > 0 && --failAt == 0; }
} // namespace

void enqueue(std::function<void()> work) {
  if (capturing)
    captured.push_back(std::move(work));
  else
    work();
}

// A step must free every buffer it allocates stream-ordered (a real CUDA graph
// cannot be relaunched otherwise): say so at exit when one was not.
struct ReportUnfreed {
  ~ReportUnfreed() {
    if (!streamOrdered.empty())
      std::fprintf(stderr, "host simulation: %zu stream-ordered allocations were never freed\n",
                   streamOrdered.size());
    if (!pinned.empty())
      std::fprintf(stderr, "host simulation: %zu pinned host allocations were never freed\n",
                   pinned.size());
  }
} reportUnfreed;

bool isCapturing() { return capturing; }
LiveHandles liveHandles() {
  LiveHandles now = live;
  now.allocations = long(mallocked.size());
  now.pinned = long(pinned.size());
  now.communicators = liveCommunicators();
  return now;
}
void failCreation(long n) { failAt = n; }
void setLastError(cudaError_t error) { lastError = error; }
void fillNewAllocations(int byte) { fillByte = byte; }
size_t liveStreamOrderedAllocations() { return streamOrdered.size(); }
CopyCounts copyCounts() { return copies; }

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
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t, size_t) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
cudaError_t cudaGetLastError() {
  cudaError_t error = pipert::hostcuda::lastError;
  pipert::hostcuda::lastError = cudaSuccess;
  return error;
}
cudaError_t cudaPeekAtLastError() { return pipert::hostcuda::lastError; }
const char *cudaGetErrorName(cudaError_t error) {
  switch (error) { // the errors the simulation itself produces
  case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
  case cudaErrorIllegalState: return "cudaErrorIllegalState";
  case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
  case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
  case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
  default: return "cudaErrorHostSimulation";
  }
}
const char *cudaGetErrorString(cudaError_t) { return "host simulation error"; }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned) {
  if (pipert::hostcuda::creationFails())
    return cudaErrorMemoryAllocation;
  *stream = new CUstream_st();
  ++pipert::hostcuda::live.streams;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (!stream)
    return cudaErrorInvalidResourceHandle;
  delete stream;
  --pipert::hostcuda::live.streams;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; } // work ran when enqueued
cudaError_t cudaEventCreate(cudaEvent_t *event) {
  if (pipert::hostcuda::creationFails())
    return cudaErrorMemoryAllocation;
  *event = new CUevent_st();
  ++pipert::hostcuda::live.events;
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned) { return cudaEventCreate(event); }
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (!event)
    return cudaErrorInvalidResourceHandle;
  delete event;
  --pipert::hostcuda::live.events;
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
  if (pipert::hostcuda::creationFails())
    return cudaErrorMemoryAllocation;
  *ptr = std::malloc(size ? size : 1);
  if (*ptr) {
    std::memset(*ptr, pipert::hostcuda::fillByte, size);
    pipert::hostcuda::mallocked[*ptr] = true;
    pipert::hostcuda::device[static_cast<const char *>(*ptr)] = size;
  }
  return *ptr ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void *ptr) {
  pipert::hostcuda::mallocked.erase(ptr);
  pipert::hostcuda::device.erase(static_cast<const char *>(ptr));
  pipert::hostcuda::streamOrdered.erase(ptr); // cudaFree also frees stream-ordered memory
  std::free(ptr);
  return cudaSuccess;
}
// Allocation happens when enqueued (also under capture: the graph keeps it);
// a free under capture is dropped, so replays reuse the memory.
cudaError_t cudaMallocAsync(void **ptr, size_t size, cudaStream_t) {
  cudaError_t status = cudaMalloc(ptr, size);
  if (status == cudaSuccess && !pipert::hostcuda::capturing) // a graph's memory is its own
    pipert::hostcuda::streamOrdered[*ptr] = size;
  return status;
}
cudaError_t cudaFreeAsync(void *ptr, cudaStream_t) {
  using namespace pipert::hostcuda;
  if (capturing)
    return cudaSuccess;
  auto it = streamOrdered.find(ptr);
  if (it != streamOrdered.end()) {
    if (fillByte) // later reads of the freed buffer would see the fill, not stale data
      std::memset(ptr, fillByte, it->second);
    streamOrdered.erase(it);
  }
  mallocked.erase(ptr);
  device.erase(static_cast<const char *>(ptr));
  std::free(ptr);
  return cudaSuccess;
}
// Pinned host memory: host memory the simulation tells apart from pageable.
cudaError_t cudaMallocHost(void **ptr, size_t size) {
  using namespace pipert::hostcuda;
  if (capturing)
    return cudaErrorStreamCaptureUnsupported;
  if (creationFails())
    return cudaErrorMemoryAllocation;
  *ptr = std::malloc(size ? size : 1);
  if (!*ptr)
    return cudaErrorMemoryAllocation;
  std::memset(*ptr, fillByte, size);
  pinned[static_cast<const char *>(*ptr)] = size;
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned) { return cudaMallocHost(ptr, size); }
cudaError_t cudaFreeHost(void *ptr) {
  using namespace pipert::hostcuda;
  if (!ptr)
    return cudaSuccess;
  if (!pinned.erase(static_cast<const char *>(ptr)))
    return cudaErrorInvalidValue; // not from cudaMallocHost
  std::free(ptr);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, cudaMemcpyKind kind) {
  if (pipert::hostcuda::capturing)
    return cudaErrorStreamCaptureUnsupported; // synchronous: never in a capture
  if (cudaError_t status = pipert::hostcuda::checkCopy(dst, src, count, kind))
    return status;
  std::memmove(dst, src, count);
  return cudaSuccess;
}
cudaError_t cudaMemset(void *ptr, int value, size_t count) {
  std::memset(ptr, value, count);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t) {
  if (cudaError_t status = pipert::hostcuda::checkCopy(dst, src, count, kind))
    return status;
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
  if (pipert::hostcuda::creationFails())
    return CUBLAS_STATUS_ALLOC_FAILED;
  *handle = new cublasContext();
  ++pipert::hostcuda::live.blas;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  delete handle;
  --pipert::hostcuda::live.blas;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t, void *, size_t) { return CUBLAS_STATUS_SUCCESS; }
const char *cublasGetStatusName(cublasStatus_t) { return "CUBLAS_STATUS_HOST_SIMULATION"; }
const char *cublasGetStatusString(cublasStatus_t) { return "host simulation"; }

} // extern "C"
