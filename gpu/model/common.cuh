// Internal to gpu/model/*.cu: CUDA types for the CUDA-free public headers, launch checks and the
// warp/block reductions the kernels share. Never included by a public header.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "gpu/cuda_check.h"
#include "gpu/model/device_array.h"
#include "gpu/simt/simt.h"

namespace sluice::gpu::model::internal {

inline cudaStream_t S(void* stream) { return static_cast<cudaStream_t>(stream); }
inline __nv_bfloat16* BF(Bf16* p) { return reinterpret_cast<__nv_bfloat16*>(p); }
inline const __nv_bfloat16* BF(const Bf16* p) { return reinterpret_cast<const __nv_bfloat16*>(p); }
static_assert(sizeof(__nv_bfloat16) == sizeof(Bf16));

// Threads per block of the model's kernels.
constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements with `threads` per block (n > 0).
inline unsigned GridFor(size_t n, int threads) {
  const size_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 * 16 ? blocks : 65535 * 16);
}

// Blocks of kThreads for kernels that give one warp to each of `rows` rows.
inline unsigned WarpRowsGrid(size_t rows) {
  return static_cast<unsigned>((rows + kThreads / 32 - 1) / (kThreads / 32));
}

template <typename T>
__device__ __forceinline__ T WarpSum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float WarpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, <= 1024); every thread gets the result.
// `shared` holds 32 T. Fixed order, so deterministic. Ends with a barrier, so it can be reused.
template <typename T>
__device__ T BlockSum(T v, T* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = WarpSum(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T total = 0;
  for (int w = 0; w < warps; ++w) total += shared[w];
  __syncthreads();
  return total;
}
__device__ inline float BlockMax(float v, float* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = WarpMax(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float m = -INFINITY;
  for (int w = 0; w < warps; ++w) m = fmaxf(m, shared[w]);
  __syncthreads();
  return m;
}

}  // namespace sluice::gpu::model::internal

// After every kernel launch: a bad configuration or an earlier asynchronous fault, with file:line.
#define SLUICE_LAUNCH_CHECK() SLUICE_CUDA_RETURN_IF_ERROR(cudaGetLastError())
