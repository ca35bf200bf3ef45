// A PyTorch profiler (Kineto) Chrome trace reduced to timed operations
// (Calibration.h): each CPU operator whose kernels ran on the GPU, its device
// time the sum of the kernels linked to it by "External id", its size from the
// operator's recorded shapes ("Input Dims", record_shapes=True):
//  - aten::mm, addmm, bmm, baddbmm: 2 m n k FLOPs (bmm: per batch);
//  - scaled-dot-product attention (flash, efficient, cuDNN) and its backward:
//    4 b h s_q s_k d forward, halved when causal, x 2.5 backward;
//  - record_param_comms (c10d's collectives): the buffer's bytes from the
//    element count and dtype, the group size; a group larger than a node spans
//    nodes (Kineto records no node).
// Operators without GPU kernels or shapes are skipped, and counted.
#pragma once

#include "plan/Calibration.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace pipec::plan {

struct KinetoSummary {
  std::vector<Measurement> measurements;
  size_t kernels = 0;        // GPU kernel events read
  size_t skipped = 0;        // recognised operators without kernels or shapes
  // Collectives across nodes whose group ranks the trace does not give (no
  // "Process Group Ranks", rank start or stride): counted one member a node.
  size_t unplaced = 0;
};

std::optional<KinetoSummary> readKinetoTrace(llvm::StringRef json, llvm::StringRef name,
                                             int64_t gpusPerNode, std::string &error);

} // namespace pipec::plan
