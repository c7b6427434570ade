#include "comm/launch_env.h"

#include <cerrno>
#include <cstdlib>
#include <string>

namespace sluice::comm {
namespace {

struct Scheme {
  const char* launcher;
  const char* rank;
  const char* world;
  const char* local_rank;
};

// Most specific first: torchrun's variables are also set by hand for MPI-launched jobs.
constexpr Scheme kSchemes[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"mpich", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

Status ParseInt(const char* name, const char* value, int* out) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || v < 0 || v > (1 << 30))
    return Status::InvalidArgument(std::string(name) + "='" + value +
                                   "' is not a non-negative integer");
  *out = static_cast<int>(v);
  return Status::OK();
}

}  // namespace

Status ParseLaunchEnv(const std::function<const char*(const char*)>& getenv, LaunchEnv* out) {
  LaunchEnv e;
  for (const Scheme& s : kSchemes) {
    const char* rank = getenv(s.rank);
    const char* world = getenv(s.world);
    if (rank == nullptr && world == nullptr) continue;
    if (rank == nullptr || world == nullptr)
      return Status::InvalidArgument(std::string(rank == nullptr ? s.rank : s.world) +
                                     " is unset while " + (rank == nullptr ? s.world : s.rank) +
                                     " is set (" + s.launcher + "-style launch)");
    SLUICE_RETURN_IF_ERROR(ParseInt(s.rank, rank, &e.rank));
    SLUICE_RETURN_IF_ERROR(ParseInt(s.world, world, &e.world));
    if (const char* local = getenv(s.local_rank)) {
      SLUICE_RETURN_IF_ERROR(ParseInt(s.local_rank, local, &e.local_rank));
    }
    e.launcher = s.launcher;
    if (e.world < 1)
      return Status::InvalidArgument(std::string(s.world) + "=" + world + ": needs at least 1");
    if (e.rank >= e.world)
      return Status::InvalidArgument(std::string(s.rank) + "=" + rank + " is outside [0, " +
                                     s.world + "=" + world + ")");
    break;
  }
  if (const char* addr = getenv("MASTER_ADDR")) e.master_addr = addr;
  if (const char* port = getenv("MASTER_PORT")) {
    SLUICE_RETURN_IF_ERROR(ParseInt("MASTER_PORT", port, &e.master_port));
    if (e.master_port == 0 || e.master_port > 65535)
      return Status::InvalidArgument(std::string("MASTER_PORT=") + port + " is not a TCP port");
  }
  *out = e;
  return Status::OK();
}

Status ReadLaunchEnv(LaunchEnv* out) {
  return ParseLaunchEnv([](const char* name) -> const char* { return std::getenv(name); }, out);
}

}  // namespace sluice::comm
