#include "gpu/model/device_array.h"

#include "gpu/cuda_check.h"

namespace sluice::gpu::model::internal {

Status DeviceAlloc(size_t bytes, void** out) {
  *out = nullptr;
  SLUICE_CUDA_RETURN_IF_ERROR(cudaMalloc(out, bytes));
  return Status::OK();
}

void DeviceFree(void* p) {
  if (p != nullptr) SLUICE_CUDA_LOG_IF_ERROR(cudaFree(p));
}

Status Upload(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes == 0) return Status::OK();
  SLUICE_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream)));
  return Status::OK();
}

Status Download(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes == 0) return Status::OK();
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  SLUICE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
  SLUICE_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
  return Status::OK();
}

Status DownloadAsync(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes == 0) return Status::OK();
  SLUICE_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost,
                                              static_cast<cudaStream_t>(stream)));
  return Status::OK();
}

Status Zero(void* dst, size_t bytes, void* stream) {
  if (bytes == 0) return Status::OK();
  SLUICE_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dst, 0, bytes, static_cast<cudaStream_t>(stream)));
  return Status::OK();
}

}  // namespace sluice::gpu::model::internal
