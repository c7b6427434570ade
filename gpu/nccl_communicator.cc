#include "gpu/nccl_communicator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpu/cuda_check.h"
#include "gpu/device.h"
#include "gpu/nccl_check.h"

namespace sluice::gpu {
namespace internal {

std::string NcclErrorMessage(ncclResult_t res, const char* call, const char* file, int line) {
  std::string msg = std::string(file) + ":" + std::to_string(line) + ": " + call + ": " +
                    ncclGetErrorString(res) + " (ncclResult_t " + std::to_string(res) + ")";
  const char* last = ncclGetLastError(nullptr);
  if (last != nullptr && last[0] != '\0') msg += ": " + std::string(last);
  return msg;
}

}  // namespace internal

// AgreeOnBatchCount needs only a few int64s; anything larger goes through in chunks.
constexpr size_t kScratchInts = 64;

struct NcclCommunicator::State {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  bool own_stream = false;
  int64_t* scratch = nullptr;  // device, kScratchInts
};

namespace {

// Waits for `stream` (null: nothing to wait for), then releases `comm` (null: none).
// ncclCommDestroy waits for the communicator's work to end, which never happens when the stream
// failed (a peer gone, a device error): the communicator is aborted then, so that an exit after
// an error does not hang. Errors are logged: this runs in destructors.
void CloseComm(ncclComm_t comm, cudaStream_t stream) {
  bool quiet = true;
  if (stream != nullptr) {
    const cudaError_t e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) internal::LogCudaError(e, "cudaStreamSynchronize", __FILE__, __LINE__);
    quiet = e == cudaSuccess;
  }
  if (comm == nullptr) return;
  const ncclResult_t r = quiet ? ncclCommDestroy(comm) : ncclCommAbort(comm);
  if (r != ncclSuccess)
    std::fprintf(stderr, "sluice: %s\n",
                 internal::NcclErrorMessage(r, quiet ? "ncclCommDestroy" : "ncclCommAbort",
                                            __FILE__, __LINE__)
                     .c_str());
}

}  // namespace

NcclCommunicator::NcclCommunicator() : s_(std::make_unique<State>()) {}

NcclCommunicator::~NcclCommunicator() {
  CloseComm(s_->comm, s_->stream);
  if (s_->scratch != nullptr) SLUICE_CUDA_LOG_IF_ERROR(cudaFree(s_->scratch));
  if (s_->own_stream && s_->stream != nullptr)
    SLUICE_CUDA_LOG_IF_ERROR(cudaStreamDestroy(s_->stream));
}

void* NcclCommunicator::stream() const { return s_->stream; }

Status NcclCommunicator::Create(const comm::LaunchEnv& env, const NcclOptions& options,
                                std::unique_ptr<NcclCommunicator>* out) {
  int devices = 0;
  SLUICE_RETURN_IF_ERROR(ProbeDevices(&devices));
  std::unique_ptr<NcclCommunicator> c(new NcclCommunicator());
  c->rank_ = env.rank;
  c->world_ = env.world;
  c->device_ = env.local_rank % devices;
  SLUICE_CUDA_RETURN_IF_ERROR(cudaSetDevice(c->device_));
  State& s = *c->s_;
  if (options.stream != nullptr) {
    s.stream = static_cast<cudaStream_t>(options.stream);
  } else {
    SLUICE_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    s.own_stream = true;
  }
  SLUICE_CUDA_RETURN_IF_ERROR(cudaMalloc(&s.scratch, kScratchInts * sizeof(int64_t)));

  ncclUniqueId id{};
  if (env.world == 1) {
    SLUICE_NCCL_RETURN_IF_ERROR(ncclGetUniqueId(&id));
  } else if (options.bootstrap != nullptr) {
    if (options.bootstrap->rank() != env.rank || options.bootstrap->world() != env.world)
      return Status::InvalidArgument(
          "NcclCommunicator: the bootstrap communicator is rank " +
          std::to_string(options.bootstrap->rank()) + " of " +
          std::to_string(options.bootstrap->world()) + ", the launch environment says rank " +
          std::to_string(env.rank) + " of " + std::to_string(env.world));
    if (env.rank == 0) SLUICE_NCCL_RETURN_IF_ERROR(ncclGetUniqueId(&id));
    SLUICE_RETURN_IF_ERROR(options.bootstrap->Broadcast(&id, sizeof(id), 0));
  } else {
    // NCCL's own bootstrap: with NCCL_COMM_ID set, ncclGetUniqueId only encodes that address and
    // ncclCommInitRank on rank 0 opens the listening socket there, so every rank can build the
    // same id on its own.
    if (std::getenv("NCCL_COMM_ID") == nullptr) {
      if (env.master_addr.empty() || env.master_port == 0)
        return Status::InvalidArgument(
            "NcclCommunicator: " + std::to_string(env.world) +
            " ranks but no way to agree on the NCCL id. HINT: set NCCL_COMM_ID=host:port, or "
            "MASTER_ADDR and MASTER_PORT (torchrun does), or run under mpirun with an "
            "MpiCommunicator as bootstrap");
      const std::string addr = env.master_addr + ":" + std::to_string(env.master_port);
      setenv("NCCL_COMM_ID", addr.c_str(), 0);
    }
    SLUICE_NCCL_RETURN_IF_ERROR(ncclGetUniqueId(&id));
  }
  SLUICE_NCCL_RETURN_IF_ERROR(ncclCommInitRank(&s.comm, env.world, id, env.rank));
  *out = std::move(c);
  return Status::OK();
}

Status NcclCommunicator::AllReduceAverage(float* data, size_t count) {
  SLUICE_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  SLUICE_NCCL_RETURN_IF_ERROR(
      ncclAllReduce(data, data, count, ncclFloat32, ncclAvg, s_->comm, s_->stream));
  return Status::OK();
}

Status NcclCommunicator::Broadcast(void* data, size_t bytes, int root) {
  if (root < 0 || root >= world_)
    return Status::InvalidArgument("Broadcast: root " + std::to_string(root) + " outside [0, " +
                                   std::to_string(world_) + ")");
  SLUICE_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  SLUICE_NCCL_RETURN_IF_ERROR(
      ncclBroadcast(data, data, bytes, ncclUint8, root, s_->comm, s_->stream));
  return Status::OK();
}

Status NcclCommunicator::Barrier() {
  // NCCL has no barrier: a one-element all-reduce that every rank must join, then wait for it.
  SLUICE_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  SLUICE_NCCL_RETURN_IF_ERROR(
      ncclAllReduce(s_->scratch, s_->scratch, 1, ncclInt64, ncclMax, s_->comm, s_->stream));
  SLUICE_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s_->stream));
  return Status::OK();
}

Status NcclCommunicator::AllReduceMaxHost(int64_t* data, size_t count) {
  SLUICE_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  for (size_t done = 0; done < count;) {
    const size_t n = std::min(kScratchInts, count - done);
    SLUICE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(s_->scratch, data + done, n * sizeof(int64_t),
                                                cudaMemcpyHostToDevice, s_->stream));
    SLUICE_NCCL_RETURN_IF_ERROR(
        ncclAllReduce(s_->scratch, s_->scratch, n, ncclInt64, ncclMax, s_->comm, s_->stream));
    SLUICE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(data + done, s_->scratch, n * sizeof(int64_t),
                                                cudaMemcpyDeviceToHost, s_->stream));
    SLUICE_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s_->stream));
    done += n;
  }
  return Status::OK();
}

namespace {

// Buckets on a stream of their own so they overlap the backward still running on the producer's
// stream, over a communicator of their own (owned): NCCL requires one communicator's operations
// not to run concurrently from two streams, and the producer's stream carries the parent's. One
// ready event per bucket of a step, created the first time and reused every step:
// cudaStreamWaitEvent captures an event's state when it is called, so recording it again next
// step cannot disturb a wait already enqueued.
class NcclLane : public comm::ReduceLane {
 public:
  NcclLane(ncclComm_t comm, cudaStream_t producer, int device)
      : comm_(comm), producer_(producer), device_(device) {}
  ~NcclLane() override {
    CloseComm(comm_, stream_);
    for (cudaEvent_t e : ready_) SLUICE_CUDA_LOG_IF_ERROR(cudaEventDestroy(e));
    if (done_ != nullptr) SLUICE_CUDA_LOG_IF_ERROR(cudaEventDestroy(done_));
    if (stream_ != nullptr) SLUICE_CUDA_LOG_IF_ERROR(cudaStreamDestroy(stream_));
  }

  Status Init() {
    SLUICE_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    SLUICE_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    SLUICE_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    return Status::OK();
  }

  Status Submit(float* data, size_t count) override {
    SLUICE_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    if (next_ == ready_.size()) {
      // First step with this many buckets: one more event, kept for the next steps.
      cudaEvent_t e = nullptr;
      SLUICE_CUDA_RETURN_IF_ERROR(
          cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventBlockingSync));
      ready_.push_back(e);
    }
    cudaEvent_t ready = ready_[next_++];
    // The bucket's gradients are final once the producer's work so far is done.
    SLUICE_CUDA_RETURN_IF_ERROR(cudaEventRecord(ready, producer_));
    SLUICE_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream_, ready, 0));
    SLUICE_NCCL_RETURN_IF_ERROR(
        ncclAllReduce(data, data, count, ncclFloat32, ncclAvg, comm_, stream_));
    return Status::OK();
  }

  Status Wait() override {
    SLUICE_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    SLUICE_CUDA_RETURN_IF_ERROR(cudaEventRecord(done_, stream_));
    SLUICE_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(producer_, done_, 0));
    next_ = 0;
    return Status::OK();
  }

 private:
  ncclComm_t comm_;
  cudaStream_t producer_;
  int device_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;
  std::vector<cudaEvent_t> ready_;
  size_t next_ = 0;
};

}  // namespace

Status NcclCommunicator::MakeLane(std::unique_ptr<comm::ReduceLane>* out) {
  SLUICE_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  // Same ranks, same order (color 0, key = rank); a collective of the parent, so every rank
  // calls MakeLane at the same point (like MPI_Comm_dup for the MPI lane).
  ncclComm_t lane_comm = nullptr;
  SLUICE_NCCL_RETURN_IF_ERROR(ncclCommSplit(s_->comm, 0, rank_, &lane_comm, nullptr));
  auto lane = std::make_unique<NcclLane>(lane_comm, s_->stream, device_);
  SLUICE_RETURN_IF_ERROR(lane->Init());
  *out = std::move(lane);
  return Status::OK();
}

}  // namespace sluice::gpu
