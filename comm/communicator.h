// Communicator: the collectives data-parallel training needs, over an existing library (NCCL on
// GPUs, MPI on CPUs). Ranks are started by an existing launcher (mpirun, srun, torchrun-style
// environment, launch_env.h); sluice has no cluster code of its own (DESIGN.md).
//
// Every rank calls the same collectives in the same order. Memory is the backend's: host memory
// for MpiCommunicator, device memory for NcclCommunicator (device_memory()), where calls are
// enqueued on the communicator's stream and return before they complete.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/status.h"

namespace sluice::comm {

class ReduceLane;

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  virtual const char* backend() const = 0;  // "mpi", "nccl"
  virtual bool device_memory() const = 0;

  // data[0, count) <- the elementwise mean over ranks of data[0, count), in place.
  virtual Status AllReduceAverage(float* data, size_t count) = 0;
  // data[0, bytes) <- root's data[0, bytes).
  virtual Status Broadcast(void* data, size_t bytes, int root) = 0;
  // Returns once every rank has called it (and, for NCCL, the stream's work before it is done).
  virtual Status Barrier() = 0;
  // Host memory on every backend, blocking: data[i] <- max over ranks. For agreement checks.
  virtual Status AllReduceMaxHost(int64_t* data, size_t count) = 0;
  // A lane that averages buckets in the background, in submission order (gradient_buckets.h).
  // Collective: every rank creates its lanes at the same point.
  virtual Status MakeLane(std::unique_ptr<ReduceLane>* out) = 0;
};

// Asynchronous averaging in submission order: a background thread (MPI) or a communication
// stream (NCCL) that overlaps the producer. While a lane has work in flight, use no other
// collective of the communicator that made it; Wait() first.
class ReduceLane {
 public:
  virtual ~ReduceLane() = default;
  // Averages data[0, count) over ranks once everything the producer issued before this call has
  // completed (for NCCL: the producer's stream work before now). Returns at once.
  virtual Status Submit(float* data, size_t count) = 0;
  // Until every Submit is done: blocks (MPI), or makes the producer's stream wait (NCCL). The
  // first error of any submitted reduction.
  virtual Status Wait() = 0;
};

// The uneven-batch guard (DESIGN.md, "Partition"): every rank must run the same number of steps,
// or an all-reduce waits forever for a rank that already stopped. Every rank passes its count
// (Loader::num_batches() at the start of an epoch, batches taken at its end); all ranks get OK
// or all get the same InvalidArgument naming the smallest and largest counts. One collective, so
// it cannot hang when the counts differ.
Status AgreeOnBatchCount(Communicator* comm, uint64_t batches, const char* what);

}  // namespace sluice::comm
