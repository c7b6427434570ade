#include "gpu/kernels.h"

#include <cstdint>

#include "gpu/simt/simt.h"
// The CUDA runtime: nvcc's, or the SIMT layer's CPU device backend (the SIMT build of gpu/,
// SLUICE_SIMT_DEVICE). Without either (the simt suite's own build) the layer runs every launch on
// the caller and keeps its error for simt::TakeLastError.
#if defined(__CUDACC__) || defined(SLUICE_SIMT_DEVICE)
#define SLUICE_KERNELS_CUDA_RUNTIME 1
#include "gpu/cuda_check.h"
#endif

namespace sluice::gpu {
namespace {

__device__ __forceinline__ uint64_t GlobalTimerNs() {
#if defined(__CUDACC__)
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  return simt::GlobalTimerNs();  // the SIMT layer (docs/gpu.md)
#endif
}

__global__ void SpinKernel(uint64_t ns) {
  const uint64_t start = GlobalTimerNs();
  while (GlobalTimerNs() - start < ns) {
  }
}

}  // namespace

Status SpinOnStream(void* stream, double seconds) {
  const uint64_t ns = seconds > 0 ? static_cast<uint64_t>(seconds * 1e9) : 0;
  SLUICE_LAUNCH(SpinKernel, 1, 1, 0, static_cast<cudaStream_t>(stream))(ns);
#if defined(SLUICE_KERNELS_CUDA_RUNTIME)
  // The launch's own error, or the device's sticky one; a fault of this grid on a stream comes
  // from the stream's synchronize, as on a GPU.
  SLUICE_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::OK();
#else
  return simt::TakeLastError();  // no device backend: the grid ran before the launch returned
#endif
}

}  // namespace sluice::gpu
