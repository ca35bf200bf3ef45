// The MoE stage on the GPU: the device twin of pipert::MoeStage without
// attention, its E experts all on this device or sharded over an expert group
// (ExpertExchange.h). See GpuMoeStage.cu for the parts and the fixed-capacity
// expert buffers.
#pragma once

#include "pipert/Stage.h"
#include "pipert/cuda/GpuStage.h"

#include <memory>

namespace pipert::cuda {

// `cpu` must be a MoeStage<double> holding the experts of participant
// experts->rank() (all of them when `experts` is null). Throws
// std::invalid_argument for attention, a shard that does not match `experts`,
// sizes that do not match `cpu`, or E * tokens rows beyond int range.
std::unique_ptr<GpuStage> makeGpuMoeStage(Stage<double> &cpu, const MoeConfig &config, const MicroBatchRows &rows, DType dtype,
                                          std::shared_ptr<ExpertExchange> experts = nullptr);

} // namespace pipert::cuda
