// The local half of gradient sync, shared by the transports: a group's copies
// in this process are summed into the first, and the first's values copied
// back to the others (after the transport has summed it across processes).
#pragma once

#include "Transport.h"

namespace pipert::cuda {

void sumLocalCopies(const std::vector<LocalSyncGroup> &groups, cudaStream_t stream);
void copyFirstToOthers(const std::vector<LocalSyncGroup> &groups, cudaStream_t stream);

} // namespace pipert::cuda
