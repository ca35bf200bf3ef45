// Starting NCCL with one process per GPU: which process this is comes from the
// launcher (Launcher.h: flags, torchrun, Slurm, Open MPI); the NCCL unique id
// travels either over TCP from rank 0's address and port (rank 0 listens there
// and hands every other rank the id, so it works across nodes) or through
// PIPERT_NCCL_ID_FILE (a path on a shared file system: rank 0 writes the id,
// the others wait for it; rank 0 removes it once every rank has joined, see
// forgetUniqueId, so the next job never reads a stale id — a file left by a
// crashed job must be deleted).
// Over TCP the id comes with a magic word and the world size, so a rank that
// reaches another job's rank 0 on a reused port says so instead of joining it;
// each rank answers with its rank, and rank 0 counts distinct ranks, not
// connections, so a stray or repeated connection cannot take a rank's slot.
#pragma once

#include "Launcher.h"

#include <nccl.h>

#include <string>

namespace pipert::cuda {

// Rank 0 creates the id; every rank returns it. Throws std::runtime_error when
// neither rendezvous is configured or on a socket or file error, and
// TimeoutError when the peers do not show up within `timeoutSeconds`. Every
// socket call is retried when a signal interrupts it, and every wait polls
// against the deadline.
ncclUniqueId exchangeUniqueId(const ProcessGroup &group, double timeoutSeconds);

// Called by every rank once the world communicator exists (so every rank has
// read the id): rank 0 removes PIPERT_NCCL_ID_FILE.
void forgetUniqueId(const ProcessGroup &group);

} // namespace pipert::cuda
