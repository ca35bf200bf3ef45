// Starting NCCL with one process per GPU, under the conventions torchrun, srun
// and mpirun wrappers export: RANK, WORLD_SIZE, LOCAL_RANK, and either
// MASTER_ADDR/MASTER_PORT (rank 0 listens there and hands every other rank the
// NCCL unique id over TCP, so it works across nodes) or PIPERT_NCCL_ID_FILE (a
// path on a shared file system: rank 0 writes the id, the others wait for it).
#pragma once

#include <nccl.h>

#include <string>

namespace pipert::cuda {

struct ProcessGroup {
  int rank = 0, worldSize = 1, localRank = 0;
};

// Reads RANK, WORLD_SIZE, LOCAL_RANK (default: RANK). Throws std::runtime_error
// naming the variable when one is missing or malformed.
ProcessGroup processGroupFromEnvironment();

// Rank 0 creates the id; every rank returns it. Throws std::runtime_error when
// neither rendezvous is configured, on a socket or file error, or when the
// peers do not show up within `timeoutSeconds`.
ncclUniqueId exchangeUniqueId(const ProcessGroup &group, double timeoutSeconds);

} // namespace pipert::cuda
