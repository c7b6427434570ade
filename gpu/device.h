// The CUDA runtime as gpu/'s public API sees it: device probing, streams, events, device memory
// and asynchronous copies, behind CUDA-free types. Streams travel as opaque `void*` (a
// cudaStream_t; nullptr is the legacy default stream), so tools/ and tests/ never include CUDA
// headers (DESIGN.md). Every call returns a Status naming file:line and the runtime's error.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "base/status.h"

namespace sluice::gpu {

// Asks the runtime once per process (cudaGetDeviceCount) and caches the answer. OK with
// *count > 0, or Unsupported naming the runtime's error: "no CUDA device: cudaGetDeviceCount:
// CUDA driver version is insufficient for CUDA runtime version (cudaErrorInsufficientDriver = 35)"
// on machines without a driver, cudaErrorNoDevice (100) without a GPU. Never crashes.
Status ProbeDevices(int* count);
// ProbeDevices(...).ok().
bool HaveDevice();
// "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)", or the error.
std::string DeviceDescription(int device);
Status SetDevice(int device);

// True when `p` is page-locked host memory registered with CUDA (cudaHostAlloc or registered).
bool IsPinnedHostPointer(const void* p);
// The device that was current on the thread that allocated the page-locked memory `p` (whose
// context holds it), or -1 when `p` is not page-locked.
int PinnedHostPointerDevice(const void* p);

// A non-blocking CUDA stream (it does not synchronise with the legacy default stream).
class Stream {
 public:
  static Status Create(std::unique_ptr<Stream>* out);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  void* handle() const { return stream_; }
  Status Synchronize();

 private:
  Stream() = default;
  void* stream_ = nullptr;
};

// A CUDA event. `blocking`: the host thread sleeps in Synchronize instead of spinning, leaving
// the core to the loader's decode threads (cudaEventBlockingSync).
class Event {
 public:
  static Status Create(bool timing, bool blocking, std::unique_ptr<Event>* out);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Status Record(void* stream);
  Status Synchronize();
  // Records-to-records time in seconds; both events recorded, with timing, and completed.
  static Status ElapsedSeconds(const Event& from, const Event& to, double* seconds);
  void* handle() const { return event_; }

 private:
  Event() = default;
  void* event_ = nullptr;
};

// Device memory owned by one object (cudaMalloc / cudaFree).
class DeviceBuffer {
 public:
  static Status Allocate(size_t bytes, std::unique_ptr<DeviceBuffer>* out);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() const { return data_; }
  size_t size() const { return bytes_; }

 private:
  DeviceBuffer() = default;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// cudaMemcpyAsync on `stream`. From pageable host memory the runtime stages the copy and it is
// no longer asynchronous: that is the pinned-vs-pageable difference sluice-bench feed measures.
Status CopyHostToDevice(void* dst, const void* src, size_t bytes, void* stream);
Status CopyDeviceToHost(void* dst, const void* src, size_t bytes, void* stream);
Status CopyDeviceToDevice(void* dst, const void* src, size_t bytes, void* stream);
Status MemsetDevice(void* dst, int value, size_t bytes, void* stream);
// Blocking cudaMemcpy (the bandwidth reference: the best a plain copy achieves).
Status CopyHostToDeviceSync(void* dst, const void* src, size_t bytes);
Status SynchronizeDevice();

}  // namespace sluice::gpu
