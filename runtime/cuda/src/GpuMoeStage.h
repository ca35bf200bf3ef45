// The MoE stage on the GPU: the device twin of pipert::MoeStage without
// attention and with all E experts on this device (expert-parallel size 1).
// See GpuMoeStage.cu for the parts and the fixed-capacity expert buffers.
#pragma once

#include "pipert/Stage.h"
#include "pipert/cuda/GpuStage.h"

#include <memory>

namespace pipert::cuda {

// `cpu` must be a MoeStage<double> holding all config.experts experts. Throws
// std::invalid_argument for attention, expert parallelism, sizes that do not
// match `cpu`, or E * tokens rows beyond int range.
std::unique_ptr<GpuStage> makeGpuMoeStage(Stage<double> &cpu, const MoeConfig &config, int tokens, DType dtype);

} // namespace pipert::cuda
