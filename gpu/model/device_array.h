// Typed device memory owned by one object, for the CUDA model (gpu/model/). CUDA-free: the
// allocation lives in device_array.cc, so tools/ and tests/ include this with the host compiler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "base/status.h"

namespace sluice::gpu::model {

// bfloat16 as stored on the device: the top 16 bits of an IEEE float. Kernels reinterpret it as
// __nv_bfloat16 (same size and layout); hosts round to it with features::FloatToBFloat16
// (features/half.h, round to nearest even as __float2bfloat16_rn) and widen with FloatFromBf16.
struct Bf16 {
  uint16_t bits;
};
static_assert(sizeof(Bf16) == 2);

inline float FloatFromBf16(Bf16 b) {
  const uint32_t u = static_cast<uint32_t>(b.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

namespace internal {
Status DeviceAlloc(size_t bytes, void** out);  // cudaMalloc, file:line on failure
void DeviceFree(void* p);                      // cudaFree, logs a failure
Status Upload(void* dst, const void* src, size_t bytes, void* stream);    // async on stream
Status Download(void* dst, const void* src, size_t bytes, void* stream);  // then syncs stream
Status DownloadAsync(void* dst, const void* src, size_t bytes, void* stream);  // enqueued only
Status Zero(void* dst, size_t bytes, void* stream);                       // cudaMemsetAsync
}  // namespace internal

// n elements of T in device memory (cudaMalloc: 256-byte aligned). Movable, not copyable. An
// empty array (n == 0) holds nullptr.
template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  ~DeviceArray() { internal::DeviceFree(data_); }
  DeviceArray(DeviceArray&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    if (this != &o) {
      internal::DeviceFree(data_);
      data_ = std::exchange(o.data_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  // Frees what it held, then allocates n elements (uninitialised).
  Status Allocate(size_t n) {
    internal::DeviceFree(data_);
    data_ = nullptr;
    n_ = 0;
    if (n == 0) return Status::OK();
    void* p = nullptr;
    SLUICE_RETURN_IF_ERROR(internal::DeviceAlloc(n * sizeof(T), &p));
    data_ = static_cast<T*>(p);
    n_ = n;
    return Status::OK();
  }
  T* data() const { return data_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }

  // Copies the first n elements from / to host memory on `stream`; Download synchronises the
  // stream before it returns, so the host data is ready.
  Status Upload(const T* host, size_t n, void* stream) {
    if (n > n_)
      return Status::InvalidArgument("DeviceArray::Upload: " + std::to_string(n) + " > " +
                                     std::to_string(n_));
    return internal::Upload(data_, host, n * sizeof(T), stream);
  }
  Status Download(T* host, size_t n, void* stream) const {
    if (n > n_)
      return Status::InvalidArgument("DeviceArray::Download: " + std::to_string(n) + " > " +
                                     std::to_string(n_));
    return internal::Download(host, data_, n * sizeof(T), stream);
  }
  // Download without the wait: `host` (pinned, or the copy is synchronous) is ready once an event
  // recorded on `stream` after it has completed.
  Status DownloadAsync(T* host, size_t n, void* stream) const {
    if (n > n_)
      return Status::InvalidArgument("DeviceArray::DownloadAsync: " + std::to_string(n) + " > " +
                                     std::to_string(n_));
    return internal::DownloadAsync(host, data_, n * sizeof(T), stream);
  }
  Status Zero(void* stream) { return internal::Zero(data_, bytes(), stream); }

 private:
  T* data_ = nullptr;
  size_t n_ = 0;
};

}  // namespace sluice::gpu::model
