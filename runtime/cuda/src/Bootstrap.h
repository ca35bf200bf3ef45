// Starting NCCL with one process per GPU, under the conventions torchrun, srun
// and mpirun wrappers export: RANK, WORLD_SIZE, LOCAL_RANK, and either
// MASTER_ADDR/MASTER_PORT (rank 0 listens there and hands every other rank the
// NCCL unique id over TCP, so it works across nodes) or PIPERT_NCCL_ID_FILE (a
// path on a shared file system: rank 0 writes the id, the others wait for it;
// rank 0 removes it once every rank has joined, see forgetUniqueId, so the next
// job never reads a stale id — a file left by a crashed job must be deleted).
// Over TCP the id comes with a magic word and the world size, so a rank that
// reaches another job's rank 0 on a reused port says so instead of joining it.
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

// Called by every rank once the world communicator exists (so every rank has
// read the id): rank 0 removes PIPERT_NCCL_ID_FILE.
void forgetUniqueId(const ProcessGroup &group);

} // namespace pipert::cuda
