// The executor's own small kernels (the stages' kernels live in GpuKernels).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace pipert::cuda {

// dst[i] += src[i]: sums replicated gradients in the in-process transport.
void addInto(float *dst, const float *src, size_t count, cudaStream_t stream);
// One tiny kernel writing one word: the work of an op under --model empty, so
// the runtime's per-op cost includes a real launch.
void touch(void *word, cudaStream_t stream);

} // namespace pipert::cuda
