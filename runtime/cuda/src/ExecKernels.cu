#include "ExecKernels.cuh"
#include "KernelLaunch.cuh"

#include "pipert/cuda/CudaCheck.h"

#include <algorithm>

namespace pipert::cuda {

namespace {

__global__ void addIntoKernel(float *dst, const float *src, size_t count) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x)
    dst[i] += src[i];
}

__global__ void touchKernel(unsigned *word) { *word += 1; }

} // namespace

void addInto(float *dst, const float *src, size_t count, cudaStream_t stream) {
  if (count == 0)
    return;
  unsigned blocks = unsigned(std::min<size_t>((count + 255) / 256, 1024));
  PIPERT_LAUNCH(addIntoKernel, blocks, 256, stream, dst, src, count);
  PIPERT_CUDA_LAUNCHED();
}

void touch(void *word, cudaStream_t stream) {
  PIPERT_LAUNCH(touchKernel, 1, 1, stream, static_cast<unsigned *>(word));
  PIPERT_CUDA_LAUNCHED();
}

} // namespace pipert::cuda
