#include "gpu/kernels.h"

#include <cstdint>

#include "gpu/cuda_check.h"

namespace sluice::gpu {
namespace {

__device__ __forceinline__ uint64_t GlobalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void SpinKernel(uint64_t ns) {
  const uint64_t start = GlobalTimerNs();
  while (GlobalTimerNs() - start < ns) {
  }
}

}  // namespace

Status SpinOnStream(void* stream, double seconds) {
  const uint64_t ns = seconds > 0 ? static_cast<uint64_t>(seconds * 1e9) : 0;
  SpinKernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(ns);
  SLUICE_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return Status::OK();
}

}  // namespace sluice::gpu
