// Which process of a job this is, from the launcher's environment, for the
// NCCL transport (one process per pipeline rank). Read in this order, the
// first that applies wins, field by field for the flags:
//   1. flags: --rank, --world-size, --local-rank, --master-addr, --master-port;
//   2. torchrun: RANK, WORLD_SIZE, LOCAL_RANK (default RANK), MASTER_ADDR/PORT;
//   3. Slurm (srun): SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; rank 0's
//      address is the first host of SLURM_STEP_NODELIST (else
//      SLURM_JOB_NODELIST), compressed as "node[01-04,07]";
//   4. Open MPI (mpirun): OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK; it exports
//      no address: MASTER_ADDR or --master-addr.
// The port is --master-port, else MASTER_PORT, else 29500 (torchrun's
// default) under Slurm and Open MPI. MASTER_ADDR, when set, wins over the
// Slurm node list. No CUDA or NCCL here, so it is tested on its own.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace pipert::cuda {

constexpr int kDefaultMasterPort = 29500;

// What the command line said; -1 or "" where it said nothing.
struct LaunchFlags {
  int rank = -1, worldSize = -1, localRank = -1;
  std::string masterAddr;
  int masterPort = -1;
};

struct ProcessGroup {
  int rank = 0, worldSize = 1, localRank = 0;
  std::string launcher;   // "flags", "torchrun", "Slurm", "Open MPI"
  std::string masterAddr; // rank 0's host; "" when none is known
  int masterPort = 0;     // 0 when none is known
};

// getenv, or a table in tests.
using Environment = std::function<const char *(const char *)>;
Environment processEnvironment();

// Throws std::runtime_error naming the variable or flag that is missing or
// malformed. The address may stay empty (PIPERT_NCCL_ID_FILE needs none).
ProcessGroup resolveLaunch(const LaunchFlags &flags, const Environment &env);

// Whether a launcher started several processes (or the flags say so): the
// NCCL transport is then the default.
bool launchedAsGroup(const LaunchFlags &flags, const Environment &env);

// The hosts of a Slurm node list ("a[01-03,7],b-x[1-2]c" -> a01 a02 a03 a7
// b-x1c b-x2c), at most `limit`. Throws std::runtime_error on malformed text.
std::vector<std::string> expandNodeList(const std::string &list, size_t limit = size_t(-1));
std::string firstHostOfNodeList(const std::string &list);

} // namespace pipert::cuda
