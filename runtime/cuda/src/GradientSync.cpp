#include "GradientSync.h"

#include "ExecKernels.cuh"

#include "pipert/cuda/CudaCheck.h"

namespace pipert::cuda {

void sumLocalCopies(const std::vector<LocalSyncGroup> &groups, cudaStream_t stream) {
  for (const LocalSyncGroup &g : groups)
    for (size_t k = 1; k < g.copies.size(); ++k)
      for (size_t p = 0; p < g.copies[0].size(); ++p)
        addInto(g.copies[0][p].data, g.copies[k][p].data,
                g.copies[0][p].rows * g.copies[0][p].cols, stream);
}

void copyFirstToOthers(const std::vector<LocalSyncGroup> &groups, cudaStream_t stream) {
  for (const LocalSyncGroup &g : groups)
    for (size_t k = 1; k < g.copies.size(); ++k)
      for (size_t p = 0; p < g.copies[0].size(); ++p)
        PIPERT_CUDA(cudaMemcpyAsync(g.copies[k][p].data, g.copies[0][p].data,
                                    g.copies[0][p].rows * g.copies[0][p].cols * sizeof(float),
                                    cudaMemcpyDeviceToDevice, stream));
}

} // namespace pipert::cuda
