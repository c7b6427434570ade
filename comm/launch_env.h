// Where this process sits among the training ranks, read from the environment that an existing
// launcher sets; sluice starts no processes of its own. In order of precedence:
//   torchrun-style: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT
//   Open MPI mpirun: OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK
//   MPICH/Hydra:     PMI_RANK, PMI_SIZE, MPI_LOCALRANKID
//   Slurm srun:      SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID
//   none of these:   rank 0 of 1
// MASTER_ADDR/MASTER_PORT are read whichever launcher set the ranks.
#pragma once

#include <functional>
#include <string>

#include "base/status.h"

namespace sluice::comm {

struct LaunchEnv {
  int rank = 0;
  int world = 1;
  int local_rank = 0;          // picks the GPU on a node
  std::string master_addr;     // empty when unset
  int master_port = 0;         // 0 when unset
  std::string launcher = "none";  // "torchrun", "mpirun", "mpich", "srun", "none"
};

// From a lookup function (nullptr for unset), so tests need not touch the process environment.
// InvalidArgument naming the variable for a non-integer value, a world below 1 or a rank outside
// [0, world).
Status ParseLaunchEnv(const std::function<const char*(const char*)>& getenv, LaunchEnv* out);
// ParseLaunchEnv over ::getenv.
Status ReadLaunchEnv(LaunchEnv* out);

}  // namespace sluice::comm
