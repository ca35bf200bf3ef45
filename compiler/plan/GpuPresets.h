// The GPUs the planner knows by name (a100, h100, h800, h200, b200, gb200): their
// datasheet figures and the measured efficiencies the per-operation time
// model uses. Every number carries its source in GpuPresets.cpp.
#pragma once

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace pipec::plan {

struct GpuSpec {
  std::string name;
  double memoryBytes = 0;        // HBM capacity
  double peakFlops = 0;          // dense BF16 tensor-core FLOP/s
  double peakFlopsFp8 = 0;       // dense FP8 FLOP/s; 0: no FP8 tensor cores
  double hbmBandwidth = 0;       // bytes/s
  int smCount = 0;               // streaming multiprocessors (wave quantization)
  double nvlinkBandwidth = 0;    // bytes/s per GPU per direction
  double networkBandwidth = 0;   // bytes/s per GPU per direction (one NIC a GPU)
  int gpusPerNode = 8;
  // Measured achieved fractions (see GpuPresets.cpp for each source):
  double matmulEfficiency = 0;   // a large, well-tiled BF16 GEMM, of peak
  double matmulEfficiencyFp8 = 0; // the same in FP8 at large k, of the FP8 peak
  double fp8GemmKOverhead = 0;    // an FP8 tile's fixed cost, in K elements (Cluster.h)
  double attentionForwardEfficiency = 0;  // FlashAttention forward, causal, of peak
  double attentionBackwardEfficiency = 0; // its backward
  double memoryEfficiency = 0;   // streaming elementwise kernels, of HBM bandwidth
};

// nullopt for an unknown name.
std::optional<GpuSpec> gpuPreset(llvm::StringRef name);
// "a100, h100, h800, h200, b200, gb200": for messages.
const char *gpuPresetNames();

} // namespace pipec::plan
