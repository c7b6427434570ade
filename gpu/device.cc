#include "gpu/device.h"

#include <cstdio>
#include <mutex>
#include <string>

#include "gpu/cuda_check.h"

namespace sluice::gpu {
namespace internal {

std::string CudaErrorMessage(cudaError_t err, const char* call, const char* file, int line) {
  return std::string(file) + ":" + std::to_string(line) + ": " + call + ": " +
         cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + " = " +
         std::to_string(static_cast<int>(err)) + ")";
}

void LogCudaError(cudaError_t err, const char* call, const char* file, int line) {
  std::fprintf(stderr, "sluice: %s\n", CudaErrorMessage(err, call, file, line).c_str());
}

}  // namespace internal

namespace {

cudaStream_t S(void* stream) { return static_cast<cudaStream_t>(stream); }

struct Probe {
  int count = 0;
  Status status;
};

const Probe& GetProbe() {
  static const Probe probe = [] {
    Probe p;
    int n = 0;
    const cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
      // The runtime keeps the error as the thread's last error; clear it so the next unrelated
      // check does not report it.
      (void)cudaGetLastError();
      p.status = Status::Unsupported(std::string("no CUDA device: cudaGetDeviceCount: ") +
                                     cudaGetErrorString(err) + " (" + cudaGetErrorName(err) +
                                     " = " + std::to_string(static_cast<int>(err)) + ")");
    } else if (n == 0) {
      p.status = Status::Unsupported("no CUDA device: cudaGetDeviceCount returned 0");
    } else {
      p.count = n;
    }
    return p;
  }();
  return probe;
}

}  // namespace

Status ProbeDevices(int* count) {
  const Probe& p = GetProbe();
  *count = p.count;
  return p.status;
}

bool HaveDevice() {
  int n = 0;
  return ProbeDevices(&n).ok();
}

std::string DeviceDescription(int device) {
  cudaDeviceProp prop{};
  const cudaError_t err = cudaGetDeviceProperties(&prop, device);
  if (err != cudaSuccess)
    return internal::CudaErrorMessage(err, "cudaGetDeviceProperties", __FILE__, __LINE__);
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%s (sm_%d%d, %.1f GiB)", prop.name, prop.major, prop.minor,
                static_cast<double>(prop.totalGlobalMem) / (1ull << 30));
  return buf;
}

Status SetDevice(int device) {
  SLUICE_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  return Status::OK();
}

bool IsPinnedHostPointer(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

int PinnedHostPointerDevice(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return attr.type == cudaMemoryTypeHost ? attr.device : -1;
}

Status Stream::Create(std::unique_ptr<Stream>* out) {
  std::unique_ptr<Stream> s(new Stream());
  cudaStream_t stream = nullptr;
  SLUICE_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  s->stream_ = stream;
  *out = std::move(s);
  return Status::OK();
}

Stream::~Stream() {
  if (stream_ != nullptr) SLUICE_CUDA_LOG_IF_ERROR(cudaStreamDestroy(S(stream_)));
}

Status Stream::Synchronize() {
  SLUICE_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(S(stream_)));
  return Status::OK();
}

Status Event::Create(bool timing, bool blocking, std::unique_ptr<Event>* out) {
  std::unique_ptr<Event> e(new Event());
  unsigned flags = cudaEventDefault;
  if (!timing) flags |= cudaEventDisableTiming;
  if (blocking) flags |= cudaEventBlockingSync;
  cudaEvent_t ev = nullptr;
  SLUICE_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&ev, flags));
  e->event_ = ev;
  *out = std::move(e);
  return Status::OK();
}

Event::~Event() {
  if (event_ != nullptr)
    SLUICE_CUDA_LOG_IF_ERROR(cudaEventDestroy(static_cast<cudaEvent_t>(event_)));
}

Status Event::Record(void* stream) {
  SLUICE_CUDA_RETURN_IF_ERROR(cudaEventRecord(static_cast<cudaEvent_t>(event_), S(stream)));
  return Status::OK();
}

Status Event::Synchronize() {
  SLUICE_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)));
  return Status::OK();
}

Status Event::ElapsedSeconds(const Event& from, const Event& to, double* seconds) {
  float ms = 0;
  SLUICE_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(from.event_),
                                                   static_cast<cudaEvent_t>(to.event_)));
  *seconds = ms * 1e-3;
  return Status::OK();
}

Status DeviceBuffer::Allocate(size_t bytes, std::unique_ptr<DeviceBuffer>* out) {
  std::unique_ptr<DeviceBuffer> b(new DeviceBuffer());
  SLUICE_CUDA_RETURN_IF_ERROR(cudaMalloc(&b->data_, bytes == 0 ? 1 : bytes));
  b->bytes_ = bytes;
  *out = std::move(b);
  return Status::OK();
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) SLUICE_CUDA_LOG_IF_ERROR(cudaFree(data_));
}

Status CopyHostToDevice(void* dst, const void* src, size_t bytes, void* stream) {
  SLUICE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, S(stream)));
  return Status::OK();
}

Status CopyDeviceToHost(void* dst, const void* src, size_t bytes, void* stream) {
  SLUICE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, S(stream)));
  return Status::OK();
}

Status CopyDeviceToDevice(void* dst, const void* src, size_t bytes, void* stream) {
  SLUICE_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S(stream)));
  return Status::OK();
}

Status MemsetDevice(void* dst, int value, size_t bytes, void* stream) {
  SLUICE_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dst, value, bytes, S(stream)));
  return Status::OK();
}

Status CopyHostToDeviceSync(void* dst, const void* src, size_t bytes) {
  SLUICE_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  return Status::OK();
}

Status SynchronizeDevice() {
  SLUICE_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  return Status::OK();
}

}  // namespace sluice::gpu
