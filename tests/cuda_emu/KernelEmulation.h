// The CUDA C++ device vocabulary for a host C++ compiler, so the real kernel
// sources (runtime/cuda/src/*.cu) compile with g++ and run on the CPU. It is
// force-included (-include) ahead of each .cu file compiled as C++.
//
// Execution model (KernelEmulation.cpp): a launch is a stream operation, run
// through hostcuda::enqueue (so graph capture records it). Its blocks run one
// after another; within a block every CUDA thread is a cooperative fiber with
// its own stack, all on the launching host thread, so
//   __shared__        is `static`: one block is live at a time;
//   __syncthreads()   suspends the thread until every live thread of the block
//                     has arrived (threads that returned count as arrived);
//   __shfl_*_sync     suspends it until every lane named in the mask has
//                     arrived, then exchanges the values;
//   atomicAdd         is a plain read-modify-write (no two threads run at once).
// A barrier no thread can pass (divergent __syncthreads, a shuffle waiting for
// a lane that returned) aborts with a message instead of hanging. Fibers rather
// than a std::thread per CUDA thread: a block of 256 std::threads costs ~20 ms
// to start here, 256 fibers ~0.3 ms, and the interleaving is deterministic.
// Not modelled: concurrency between streams (every stream operation runs when
// enqueued), uninitialized shared memory (static: zero, then the last block's).
#pragma once

#define PIPERT_KERNEL_EMULATION 1

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>

// cuda_runtime.h, read by a host compiler, already makes __global__,
// __device__ and __host__ empty and __forceinline__ always_inline.
#undef __shared__
#define __shared__ static

namespace pipert::emu {

// Where the running CUDA thread is.
struct ThreadPosition {
  uint3 thread, block; // threadIdx, blockIdx
  dim3 blockSize, gridSize; // blockDim, gridDim
};
const ThreadPosition &position();

// Runs `kernel` on every thread of a grid x block launch, as a stream
// operation on `stream` (through hostcuda::enqueue). A bad configuration runs
// nothing and is reported by the next cudaGetLastError, as on a GPU.
void launch(dim3 grid, dim3 block, cudaStream_t stream, std::function<void()> kernel);

// The exchange behind every shuffle: publishes `bits` (the calling lane's
// value), waits for the lanes of `mask`, returns lane `sourceLane`'s bits.
uint64_t shuffleBits(unsigned mask, uint64_t bits, int sourceLane);
void syncThreads();
int laneId();

template <typename T> T shuffle(unsigned mask, T value, int sourceLane) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(uint64_t), "shuffle of a small value");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = shuffleBits(mask, bits, sourceLane);
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

} // namespace pipert::emu

#define threadIdx (::pipert::emu::position().thread)
#define blockIdx (::pipert::emu::position().block)
#define blockDim (::pipert::emu::position().blockSize)
#define gridDim (::pipert::emu::position().gridSize)

inline void __syncthreads() { ::pipert::emu::syncThreads(); }

// Lanes outside [0, width) of the caller's segment keep their own value.
template <typename T> T __shfl_sync(unsigned mask, T var, int srcLane, int width = 32) {
  const int lane = ::pipert::emu::laneId(), base = lane / width * width;
  return ::pipert::emu::shuffle(mask, var, base + (srcLane % width + width) % width);
}
template <typename T> T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  const int lane = ::pipert::emu::laneId(), d = static_cast<int>(delta);
  return ::pipert::emu::shuffle(mask, var, lane % width >= d ? lane - d : lane);
}
template <typename T> T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32) {
  const int lane = ::pipert::emu::laneId(), d = static_cast<int>(delta);
  return ::pipert::emu::shuffle(mask, var, lane % width + d < width ? lane + d : lane);
}
// A lane may read an earlier segment, not a later one.
template <typename T> T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = 32) {
  const int lane = ::pipert::emu::laneId(), source = lane ^ laneMask;
  return ::pipert::emu::shuffle(mask, var, source < (lane / width + 1) * width ? source : lane);
}

namespace pipert::emu {
template <typename T> struct Identity { using type = T; }; // keeps `value` out of deduction, as CUDA converts it
} // namespace pipert::emu

template <typename T> T atomicAdd(T *address, typename ::pipert::emu::Identity<T>::type value) {
  static_assert(std::is_arithmetic_v<T>, "atomicAdd of a number");
  const T old = *address;
  *address = old + value;
  return old;
}

// The kernels call these unqualified, as CUDA's math library declares them.
using std::isinf;
using std::isnan;
