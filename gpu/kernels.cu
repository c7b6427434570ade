#include "gpu/kernels.h"

#include <cstdint>

#include "gpu/simt/simt.h"
#if defined(__CUDACC__)
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
#if defined(__CUDACC__)
  SLUICE_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::OK();
#else
  return simt::TakeLastError();  // the SIMT layer ran the grid before returning
#endif
}

}  // namespace sluice::gpu
