// Owners of CUDA, cuBLAS and NCCL handles: each frees its handle when it goes,
// so a constructor that fails halfway (a later handle cannot be created, a
// peer does not show up) leaks nothing that was made before. Destruction
// never throws and never checks: after an error the device may be gone.
#pragma once

#include "pipert/cuda/CudaCheck.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <utility>
#include <vector>

namespace pipert::cuda {

// One handle and the function that releases it; movable, not copyable.
template <typename Handle, typename Release>
class UniqueHandle {
public:
  UniqueHandle() = default;
  explicit UniqueHandle(Handle handle) : handle_(handle) {}
  UniqueHandle(UniqueHandle &&other) noexcept : handle_(std::exchange(other.handle_, Handle{})) {}
  UniqueHandle &operator=(UniqueHandle &&other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, Handle{});
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle &) = delete;
  UniqueHandle &operator=(const UniqueHandle &) = delete;
  ~UniqueHandle() { reset(); }

  Handle get() const { return handle_; }
  operator Handle() const { return handle_; } // pass where the raw handle goes
  Handle release() { return std::exchange(handle_, Handle{}); }
  void reset() noexcept {
    if (handle_ != Handle{})
      Release{}(std::exchange(handle_, Handle{}));
  }

private:
  Handle handle_{};
};

struct StreamRelease {
  void operator()(cudaStream_t s) const noexcept { cudaStreamDestroy(s); }
};
struct EventRelease {
  void operator()(cudaEvent_t e) const noexcept { cudaEventDestroy(e); }
};
struct DeviceMemoryRelease {
  void operator()(void *p) const noexcept { cudaFree(p); }
};
struct GraphExecRelease {
  void operator()(cudaGraphExec_t g) const noexcept { cudaGraphExecDestroy(g); }
};
struct BlasRelease {
  void operator()(cublasHandle_t h) const noexcept { cublasDestroy(h); }
};
// A communicator whose work finished is destroyed; one still in progress or
// failed is aborted (ncclCommDestroy would wait for a peer that may never come).
struct CommRelease {
  void operator()(ncclComm_t comm) const noexcept {
    ncclResult_t state = ncclInternalError;
    if (ncclCommGetAsyncError(comm, &state) == ncclSuccess && state == ncclSuccess)
      ncclCommDestroy(comm);
    else
      ncclCommAbort(comm);
  }
};

using UniqueStream = UniqueHandle<cudaStream_t, StreamRelease>;
using UniqueEvent = UniqueHandle<cudaEvent_t, EventRelease>;
using DeviceMemory = UniqueHandle<void *, DeviceMemoryRelease>;
using UniqueGraphExec = UniqueHandle<cudaGraphExec_t, GraphExecRelease>;
using UniqueBlas = UniqueHandle<cublasHandle_t, BlasRelease>;
using UniqueComm = UniqueHandle<ncclComm_t, CommRelease>;

// Checked constructors: a handle exists only once its owner does.
inline UniqueStream makeStream(unsigned flags = cudaStreamNonBlocking) {
  cudaStream_t s = nullptr;
  PIPERT_CUDA(cudaStreamCreateWithFlags(&s, flags));
  return UniqueStream(s);
}
inline UniqueEvent makeEvent(unsigned flags = cudaEventDisableTiming) {
  cudaEvent_t e = nullptr;
  PIPERT_CUDA(cudaEventCreateWithFlags(&e, flags));
  return UniqueEvent(e);
}
inline DeviceMemory allocateDevice(size_t bytes) {
  void *p = nullptr;
  PIPERT_CUDA(cudaMalloc(&p, bytes));
  return DeviceMemory(p);
}
inline UniqueBlas makeBlas() {
  cublasHandle_t h = nullptr;
  PIPERT_CUBLAS(cublasCreate(&h));
  return UniqueBlas(h);
}

// Aborts a communicator now (ncclCommAbort) and forgets it.
inline void abortComm(UniqueComm &comm) noexcept {
  if (comm.get())
    ncclCommAbort(comm.release());
}

// Releases the communicators of a process together: when any reports an
// asynchronous error or unfinished work, every one is aborted before any is
// destroyed (ncclCommDestroy of a healthy one can wait for a peer that died
// with the failing one; an abort never waits); else each is destroyed.
inline void releaseCommunicators(const std::vector<UniqueComm *> &comms) noexcept {
  bool healthy = true;
  for (UniqueComm *comm : comms) {
    ncclResult_t state = ncclInternalError;
    if (comm->get() && (ncclCommGetAsyncError(comm->get(), &state) != ncclSuccess || state != ncclSuccess))
      healthy = false;
  }
  for (UniqueComm *comm : comms)
    healthy ? comm->reset() : abortComm(*comm);
}

} // namespace pipert::cuda
