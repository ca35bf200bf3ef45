// A host simulation of the CUDA runtime, cuBLAS and NCCL entry points the CUDA
// executor calls, for testing the executor (runtime/cuda/src: stream commands,
// buffers, the in-process transport, gradient sync, CUDA-graph capture and
// replay, the reference check) on a machine without a GPU.
//
// Memory kinds are kept apart as on a GPU: a copy's cudaMemcpyKind must match
// where its pointers are (device: cudaMalloc/cudaMallocAsync, anywhere inside;
// host: anything else), or it fails with cudaErrorInvalidValue; a capture
// may copy between the device and pinned host memory (cudaMallocHost,
// cudaHostAlloc) only, as a CUDA graph's memcpy node requires, and
// cudaMallocHost cannot be captured (cudaErrorStreamCaptureUnsupported).
//
// Semantics: "device" memory is host memory; every stream operation runs at
// once, when it is enqueued. That is a valid execution of a stream program:
// each rank's commands are enqueued in an order where every wait follows its
// record, and a receive is enqueued only after its send. Under stream capture
// operations are recorded instead, and a graph launch replays them in order
// (allocations made during capture stay for the graph's life, as the graph's
// own memory does on a GPU). NCCL runs between processes on this machine
// (HostNccl.cpp), its operations enqueued like the rest.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>

namespace pipert::hostcuda {

// Runs `work` now, or records it while a stream is being captured.
void enqueue(std::function<void()> work);

// Whether a stream is being captured (work is recorded, not run).
bool isCapturing();

// What cudaGetLastError reports next (a failed kernel launch: the host kernel
// emulation of tests/cuda_emu sets it, as a bad launch configuration does).
void setLastError(cudaError_t error);

// Fills every later allocation with `byte` (default 0, as calloc). A GPU
// leaves fresh memory undefined; 0xFF makes reads of never-written memory
// show up as NaN (float), -1 (int). With a non-zero byte, memory freed by
// cudaFreeAsync outside capture is filled with it too, before it goes.
void fillNewAllocations(int byte);

// Handles alive now, to test that failures leak none: streams, events, cuBLAS
// handles, cudaMalloc allocations, pinned host allocations (cudaMallocHost,
// cudaHostAlloc), NCCL communicators (HostNccl.cpp).
struct LiveHandles {
  long streams = 0, events = 0, blas = 0, allocations = 0, communicators = 0, pinned = 0;
  bool operator==(const LiveHandles &o) const {
    return streams == o.streams && events == o.events && blas == o.blas &&
           allocations == o.allocations && communicators == o.communicators &&
           pinned == o.pinned;
  }
};
LiveHandles liveHandles();
long liveCommunicators(); // HostNccl.cpp
long abortedCommunicators(); // ncclCommAbort calls so far (HostNccl.cpp)

// Makes the `n`-th stream, event, cuBLAS handle or cudaMalloc from now fail
// (cudaErrorMemoryAllocation, CUBLAS_STATUS_ALLOC_FAILED); 0 turns it off.
void failCreation(long n);

// Copies by kind (cudaMemcpy and cudaMemcpyAsync) since the start, counted
// when issued (also under capture), to test what moved where.
struct CopyCounts {
  long deviceToHost = 0, hostToDevice = 0, deviceToDevice = 0;
  size_t bytesToHost = 0, bytesToDevice = 0;
};
CopyCounts copyCounts();

// Stream-ordered allocations (cudaMallocAsync) not freed yet; those freed
// under capture stay: the graph keeps them.
size_t liveStreamOrderedAllocations();

} // namespace pipert::hostcuda
