#include "comm/mpi_communicator.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <string>

#include "comm/mpi_check.h"
#include "comm/thread_lane.h"

namespace sluice::comm {
namespace internal {

std::string MpiErrorMessage(int err, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(err, text, &len) != MPI_SUCCESS) len = 0;
  return std::string(file) + ":" + std::to_string(line) + ": " + call + ": " +
         std::string(text, len) + " (MPI error " + std::to_string(err) + ")";
}

}  // namespace internal

namespace {

void FinalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

Status InitOnce() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  int initialized = 0;
  SLUICE_MPI_RETURN_IF_ERROR(MPI_Initialized(&initialized));
  int provided = 0;
  if (!initialized) {
    SLUICE_MPI_RETURN_IF_ERROR(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
    // We started MPI, so we end it; Open MPI reports a rank that exits without MPI_Finalize as
    // failed.
    std::atexit(FinalizeAtExit);
  } else {
    SLUICE_MPI_RETURN_IF_ERROR(MPI_Query_thread(&provided));
  }
  if (provided < MPI_THREAD_MULTIPLE)
    return Status::Unsupported("MPI provides thread level " + std::to_string(provided) +
                               ", below MPI_THREAD_MULTIPLE, which the gradient lane needs");
  return Status::OK();
}

// MPI counts are int: split larger buffers.
constexpr size_t kMaxChunk = INT_MAX / 2;

}  // namespace

struct MpiCommunicator::Handle {
  MPI_Comm comm = MPI_COMM_NULL;
};

Status MpiCommunicator::Create(std::unique_ptr<MpiCommunicator>* out) {
  SLUICE_RETURN_IF_ERROR(InitOnce());
  std::unique_ptr<MpiCommunicator> c(new MpiCommunicator());
  c->comm_ = std::make_unique<Handle>();
  // A communicator of our own: errors on it are returned rather than aborting, whatever the
  // program set on MPI_COMM_WORLD.
  SLUICE_MPI_RETURN_IF_ERROR(MPI_Comm_dup(MPI_COMM_WORLD, &c->comm_->comm));
  SLUICE_MPI_RETURN_IF_ERROR(MPI_Comm_set_errhandler(c->comm_->comm, MPI_ERRORS_RETURN));
  SLUICE_MPI_RETURN_IF_ERROR(MPI_Comm_rank(c->comm_->comm, &c->rank_));
  SLUICE_MPI_RETURN_IF_ERROR(MPI_Comm_size(c->comm_->comm, &c->world_));
  *out = std::move(c);
  return Status::OK();
}

MpiCommunicator::~MpiCommunicator() {
  if (comm_ != nullptr && comm_->comm != MPI_COMM_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_->comm);
  }
}

Status MpiCommunicator::Duplicate(std::unique_ptr<MpiCommunicator>* out) {
  std::unique_ptr<MpiCommunicator> c(new MpiCommunicator());
  c->comm_ = std::make_unique<Handle>();
  SLUICE_MPI_RETURN_IF_ERROR(MPI_Comm_dup(comm_->comm, &c->comm_->comm));
  SLUICE_MPI_RETURN_IF_ERROR(MPI_Comm_set_errhandler(c->comm_->comm, MPI_ERRORS_RETURN));
  c->rank_ = rank_;
  c->world_ = world_;
  *out = std::move(c);
  return Status::OK();
}

void MpiCommunicator::Abort(int code) {
  MPI_Abort(comm_->comm, code);
  std::abort();  // MPI_Abort does not return; should the library, this rank still ends
}

Status MpiCommunicator::AllReduceAverage(float* data, size_t count) {
  for (size_t done = 0; done < count;) {
    const int n = static_cast<int>(std::min(kMaxChunk, count - done));
    SLUICE_MPI_RETURN_IF_ERROR(
        MPI_Allreduce(MPI_IN_PLACE, data + done, n, MPI_FLOAT, MPI_SUM, comm_->comm));
    done += n;
  }
  // Sum, then one correctly rounded division: every rank gets the same bits, and the mean is exact
  // whenever the sum is (the tests' integer-valued gradients).
  const float w = static_cast<float>(world_);
  if (world_ > 1)
    for (size_t i = 0; i < count; ++i) data[i] /= w;
  return Status::OK();
}

Status MpiCommunicator::Broadcast(void* data, size_t bytes, int root) {
  if (root < 0 || root >= world_)
    return Status::InvalidArgument("Broadcast: root " + std::to_string(root) + " outside [0, " +
                                   std::to_string(world_) + ")");
  char* p = static_cast<char*>(data);
  for (size_t done = 0; done < bytes;) {
    const int n = static_cast<int>(std::min(kMaxChunk, bytes - done));
    SLUICE_MPI_RETURN_IF_ERROR(MPI_Bcast(p + done, n, MPI_BYTE, root, comm_->comm));
    done += n;
  }
  return Status::OK();
}

Status MpiCommunicator::Barrier() {
  SLUICE_MPI_RETURN_IF_ERROR(MPI_Barrier(comm_->comm));
  return Status::OK();
}

Status MpiCommunicator::AllReduceMaxHost(int64_t* data, size_t count) {
  SLUICE_MPI_RETURN_IF_ERROR(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count),
                                           MPI_INT64_T, MPI_MAX, comm_->comm));
  return Status::OK();
}

Status MpiCommunicator::MakeLane(std::unique_ptr<ReduceLane>* out) {
  std::unique_ptr<MpiCommunicator> dup;
  SLUICE_RETURN_IF_ERROR(Duplicate(&dup));
  *out = std::make_unique<ThreadLane>(std::move(dup));
  return Status::OK();
}

}  // namespace sluice::comm
