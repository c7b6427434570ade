// MpiCommunicator: the CPU Communicator over MPI (Open MPI from Debian's libopenmpi-dev), for
// machines without GPUs and for tests. Ranks come from the MPI launcher:
//
//   mpirun -np 4 ./train ...        (one machine: add --oversubscribe beyond the core count)
//
// Host memory. The first Create initialises MPI (MPI_THREAD_MULTIPLE, because ThreadLane calls
// collectives from its own thread) unless the program already did, and then finalises it at
// exit; errors are returned (MPI_ERRORS_RETURN), never aborted on, unless the program calls Abort.
#pragma once

#include <memory>

#include "comm/communicator.h"

namespace sluice::comm {

class MpiCommunicator : public Communicator {
 public:
  // MPI_COMM_WORLD. Unsupported when the MPI library gives less than MPI_THREAD_MULTIPLE.
  static Status Create(std::unique_ptr<MpiCommunicator>* out);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  const char* backend() const override { return "mpi"; }
  bool device_memory() const override { return false; }

  Status AllReduceAverage(float* data, size_t count) override;
  Status Broadcast(void* data, size_t bytes, int root) override;
  Status Barrier() override;
  Status AllReduceMaxHost(int64_t* data, size_t count) override;
  // A ThreadLane on a duplicate of this communicator (MPI_Comm_dup: collective).
  Status MakeLane(std::unique_ptr<ReduceLane>* out) override;
  // A communicator of the same ranks whose collectives never match this one's (MPI_Comm_dup).
  Status Duplicate(std::unique_ptr<MpiCommunicator>* out);
  // Ends every rank of the job with exit status `code` (MPI_Abort), for a program whose rank hit an
  // error the others cannot know of: returning would leave them blocked in their next collective
  // and this rank in MPI_Finalize. Print the error first. For programs, not library code.
  [[noreturn]] void Abort(int code);

 private:
  MpiCommunicator() = default;
  struct Handle;
  std::unique_ptr<Handle> comm_;
  int rank_ = 0;
  int world_ = 1;
};

}  // namespace sluice::comm
