// The sub-operations of one chunk, in DeepSeek-V3's split (report, Figure 4):
// compute (attention, MLP) and communication (the MoE dispatch and combine
// all-to-alls). Shared by the cost model and the overlap plan.
#pragma once

#include "pipert/SubOp.h"

#include <array>
#include <cstdint>

namespace pipec {

using SubOp = pipert::SubOp; // one definition, shared with the programs pipec emits
inline constexpr int kSubOps = 4;

// The durations of one direction's sub-operations of one stage, indexed by SubOp.
using SubOpDurations = std::array<double, kSubOps>;

} // namespace pipec
