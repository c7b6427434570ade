// NcclCommunicator: the GPU Communicator over NCCL. Device memory; every call is enqueued on the
// communicator's stream (the trainer's compute stream, or one of its own) and returns before it
// completes, except Barrier and AllReduceMaxHost, which wait.
//
// Ranks come from the launcher (launch_env.h); the GPU is LOCAL_RANK modulo the node's device
// count. The NCCL unique id is agreed without any code of ours:
//   - with a `bootstrap` communicator (an MpiCommunicator under mpirun): rank 0 calls
//     ncclGetUniqueId and broadcasts it;
//   - else through NCCL's own bootstrap: NCCL_COMM_ID=host:port if set, else it is set to
//     MASTER_ADDR:MASTER_PORT (torchrun/srun-style); NCCL's rank 0 listens there and the others
//     connect (pick a port no other service of the job uses);
//   - one rank needs neither.
#pragma once

#include <memory>

#include "comm/communicator.h"
#include "comm/launch_env.h"

namespace sluice::gpu {

struct NcclOptions {
  void* stream = nullptr;              // cudaStream_t for the collectives; nullptr: create one
  comm::Communicator* bootstrap =
      nullptr;  // host communicator to broadcast the unique id (optional)
};

class NcclCommunicator : public comm::Communicator {
 public:
  // Unsupported without a device; InvalidArgument when world > 1 and no way to agree on the id.
  static Status Create(const comm::LaunchEnv& env, const NcclOptions& options,
                       std::unique_ptr<NcclCommunicator>* out);
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  const char* backend() const override { return "nccl"; }
  bool device_memory() const override { return true; }
  int device() const { return device_; }
  void* stream() const;

  Status AllReduceAverage(float* data, size_t count) override;  // ncclAvg
  Status Broadcast(void* data, size_t bytes, int root) override;
  Status Barrier() override;
  Status AllReduceMaxHost(int64_t* data, size_t count) override;
  // A lane on a communication stream and a communicator (ncclCommSplit) of its own: Submit makes
  // it wait for the work enqueued on stream() so far (the backward that produced the bucket),
  // Wait makes stream() wait for it.
  Status MakeLane(std::unique_ptr<comm::ReduceLane>* out) override;

 private:
  struct State;
  NcclCommunicator();
  std::unique_ptr<State> s_;
  int rank_ = 0;
  int world_ = 1;
  int device_ = 0;
};

}  // namespace sluice::gpu
