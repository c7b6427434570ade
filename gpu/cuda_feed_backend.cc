#include "gpu/cuda_feed_backend.h"

#include <string>
#include <vector>

#include "gpu/cuda_check.h"
#include "gpu/device.h"

namespace sluice::gpu {
namespace {

class CudaFeedBackend : public FeedBackend {
 public:
  ~CudaFeedBackend() override {
    for (cudaEvent_t e : events_) SLUICE_CUDA_LOG_IF_ERROR(cudaEventDestroy(e));
    if (copy_ != nullptr) SLUICE_CUDA_LOG_IF_ERROR(cudaStreamDestroy(copy_));
    if (own_compute_ && compute_ != nullptr) SLUICE_CUDA_LOG_IF_ERROR(cudaStreamDestroy(compute_));
  }

  Status Init(const CudaFeedOptions& o) {
    if (o.device >= 0) SLUICE_CUDA_RETURN_IF_ERROR(cudaSetDevice(o.device));
    SLUICE_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
    if (o.compute_stream != nullptr) {
      compute_ = static_cast<cudaStream_t>(o.compute_stream);
    } else {
      SLUICE_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
      own_compute_ = true;
    }
    return Status::OK();
  }

  Status AllocateDevice(size_t bytes, void** out) override {
    SLUICE_CUDA_RETURN_IF_ERROR(cudaMalloc(out, bytes));
    return Status::OK();
  }
  Status FreeDevice(void* p) override {
    SLUICE_CUDA_RETURN_IF_ERROR(cudaFree(p));
    return Status::OK();
  }
  Status CreateEvent(bool timing, EventId* out) override {
    cudaEvent_t e = nullptr;
    const unsigned flags = cudaEventBlockingSync | (timing ? 0u : cudaEventDisableTiming);
    SLUICE_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, flags));
    *out = static_cast<EventId>(events_.size());
    events_.push_back(e);
    return Status::OK();
  }
  Status CopyToDevice(void* dst, const void* src, size_t bytes) override {
    SLUICE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, copy_));
    return Status::OK();
  }
  Status Record(EventId e, FeedStream s) override {
    SLUICE_CUDA_RETURN_IF_ERROR(cudaEventRecord(Ev(e), Str(s)));
    return Status::OK();
  }
  Status StreamWait(FeedStream s, EventId e) override {
    SLUICE_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(Str(s), Ev(e), 0));
    return Status::OK();
  }
  Status Query(EventId e, bool* done) override {
    const cudaError_t err = cudaEventQuery(Ev(e));
    if (err == cudaErrorNotReady) {
      *done = false;
      return Status::OK();
    }
    SLUICE_CUDA_RETURN_IF_ERROR(err);
    *done = true;
    return Status::OK();
  }
  Status Synchronize(EventId e) override {
    SLUICE_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(Ev(e)));
    return Status::OK();
  }
  Status ElapsedSeconds(EventId from, EventId to, double* seconds) override {
    float ms = 0;
    SLUICE_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, Ev(from), Ev(to)));
    *seconds = ms * 1e-3;
    return Status::OK();
  }
  Status SynchronizeAll() override {
    SLUICE_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(copy_));
    SLUICE_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(compute_));
    return Status::OK();
  }
  void* compute_stream() const override { return compute_; }

 private:
  cudaEvent_t Ev(EventId e) const { return events_[static_cast<size_t>(e)]; }
  cudaStream_t Str(FeedStream s) const { return s == FeedStream::kCopy ? copy_ : compute_; }

  cudaStream_t copy_ = nullptr;
  cudaStream_t compute_ = nullptr;
  bool own_compute_ = false;
  std::vector<cudaEvent_t> events_;
};

}  // namespace

Status MakeCudaFeedBackend(const CudaFeedOptions& options, std::unique_ptr<FeedBackend>* out) {
  int count = 0;
  SLUICE_RETURN_IF_ERROR(ProbeDevices(&count));
  auto be = std::make_unique<CudaFeedBackend>();
  SLUICE_RETURN_IF_ERROR(be->Init(options));
  *out = std::move(be);
  return Status::OK();
}

}  // namespace sluice::gpu
