// The free functions of GpuStage.h: which GPU stage twins a CPU stage, the
// last stage's loss, host-to-device upload of inputs and targets, and the
// dtype names and sizes.
#include "GpuKernels.cuh"
#include "GpuMlpStage.h"
#include "GpuMoeStage.h"

#include "pipert/cuda/GpuStage.h"

#include <stdexcept>
#include <vector>

namespace pipert::cuda {

const char *dtypeName(DType dtype) { return dtype == DType::F32 ? "fp32" : "bf16"; }

size_t dtypeBytes(DType dtype) { return dtype == DType::F32 ? sizeof(float) : sizeof(__nv_bfloat16); }

std::unique_ptr<GpuStage> makeGpuStage(Stage<double> &cpu, const StageSpec &spec, const MicroBatchRows &rows,
                                       DType dtype, std::shared_ptr<ExpertExchange> experts) {
  if (rows.tokens <= 0)
    throw std::invalid_argument("GPU stage " + std::to_string(cpu.stageIndex()) +
                                ": tokens per micro-batch must be positive, got " + std::to_string(rows.tokens));
  for (int size : rows.sizes)
    if (size <= 0 || static_cast<long long>(size) * rows.tokens > (1 << 24))
      throw std::invalid_argument("GPU stage " + std::to_string(cpu.stageIndex()) + ": a micro-batch of size " +
                                  std::to_string(size) + " x " + std::to_string(rows.tokens) +
                                  " tokens is out of range (1 .. 2^24 rows)");
  if (spec.kind == StageKind::Dense)
    return makeGpuDenseStage(cpu, spec.dense, rows, dtype);
  return makeGpuMoeStage(cpu, spec.moe, rows, dtype, std::move(experts));
}

void mseLossAndGrad(const void *output, const void *target, void *gradOutput, double *loss, size_t tokens,
                    size_t hidden, DType dtype, cudaStream_t stream, double weight) {
  const size_t n = tokens * hidden;
  if (dtype == DType::F32)
    mseLossGrad(static_cast<const float *>(output), static_cast<const float *>(target),
                static_cast<float *>(gradOutput), loss, n, stream, weight);
  else
    mseLossGrad(static_cast<const __nv_bfloat16 *>(output), static_cast<const __nv_bfloat16 *>(target),
                static_cast<__nv_bfloat16 *>(gradOutput), loss, n, stream, weight);
}

// Converted on the host (double straight to the target type: one rounding),
// then copied. The copy is from pageable memory, which returns once the data
// is staged, so the temporary may go; it is not capturable (upload outside a
// graph).
void uploadActivation(const std::vector<double> &host, void *device, DType dtype, cudaStream_t stream) {
  if (host.empty())
    return;
  if (dtype == DType::F32) {
    const std::vector<float> values(host.begin(), host.end());
    PIPERT_CUDA(cudaMemcpyAsync(device, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice,
                                stream));
  } else {
    std::vector<__nv_bfloat16> values(host.size());
    for (size_t i = 0; i < host.size(); ++i)
      values[i] = __double2bfloat16(host[i]);
    PIPERT_CUDA(cudaMemcpyAsync(device, values.data(), values.size() * sizeof(__nv_bfloat16),
                                cudaMemcpyHostToDevice, stream));
  }
}

} // namespace pipert::cuda
