// The CUDA shim: a .cu file that includes this compiles under nvcc unchanged and under the host
// compiler, where its kernels run on the SIMT layer's CPU runtime (gpu/simt/runtime.h).
//
// Launch every kernel through SLUICE_LAUNCH, never `<<< >>>` directly:
//   SLUICE_LAUNCH(Kernel, grid, block, smem_bytes, stream)(args...);
// is `Kernel<<<grid, block, smem_bytes, stream>>>(args...)` under nvcc. On the host, on the null
// stream it runs the grid before returning and keeps any error for sluice::simt::TakeLastError();
// on a stream of the CPU device backend (gpu/simt/cuda_runtime_host.h) it queues the grid on the
// stream's worker thread and the error surfaces at the next synchronize or cudaGetLastError.
//
// Dynamic shared memory is declared with SLUICE_DYNAMIC_SHARED(float, smem) instead of
// `extern __shared__ float smem[];`: no macro can make that declaration legal host C++ (the
// array needs a definition of a name only the kernel knows), so the one-source spelling is this.
#pragma once

#if defined(__CUDACC__)

#define SLUICE_LAUNCH(kernel, grid, block, smem, stream) kernel<<<grid, block, smem, stream>>>
#define SLUICE_DYNAMIC_SHARED(type, name) extern __shared__ type name[]

#else  // the host compiler: the SIMT layer

#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "gpu/simt/runtime.h"

#define SLUICE_LAUNCH(kernel, grid, block, smem, stream) \
  ::sluice::simt::MakeLauncher(#kernel, kernel, grid, block, smem, stream)
#define SLUICE_DYNAMIC_SHARED(type, name) \
  type* const name = reinterpret_cast<type*>(::sluice::simt::detail::Current().dynamic_shared)

// CUDA's own host_defines.h (reached through vector_types.h or cuda_bf16.h where the toolkit's
// headers are used) defines these as nothing on the host already; __shared__ is ours either way.
#ifndef __global__
#define __global__
#endif
#ifndef __device__
#define __device__
#endif
#ifndef __host__
#define __host__
#endif
#ifndef __forceinline__
#define __forceinline__ inline
#endif
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif
#undef __shared__
// Static shared memory: one instance per host thread. A host thread runs one block at a time and
// every fiber of the block runs on it, so that is one instance per block, as on a GPU (and, as on
// a GPU, its contents at the start of a block are whatever the last block left).
#define __shared__ static thread_local

// CUDA's own spelling of a stream handle, so `static_cast<cudaStream_t>(p)` compiles.
using cudaStream_t = struct CUstream_st*;

#define threadIdx (::sluice::simt::detail::Current().thread_idx)
#define blockIdx (::sluice::simt::detail::Current().block_idx)
#define blockDim (::sluice::simt::detail::Current().block_dim)
#define gridDim (::sluice::simt::detail::Current().grid_dim)
inline constexpr int warpSize = 32;

inline void __syncthreads() { ::sluice::simt::detail::SyncThreads(); }
// The barrier with a block-wide reduction of `predicate` over every thread of the block.
inline int __syncthreads_count(int predicate) {
  return static_cast<int>(::sluice::simt::detail::SyncThreadsCount(predicate != 0));
}
inline int __syncthreads_and(int predicate) {
  const dim3 b = blockDim;
  return ::sluice::simt::detail::SyncThreadsCount(predicate != 0) == b.x * b.y * b.z;
}
inline int __syncthreads_or(int predicate) {
  return ::sluice::simt::detail::SyncThreadsCount(predicate != 0) != 0;
}

inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ::sluice::simt::detail::WarpCollective(
      {::sluice::simt::detail::WarpOpKind::kSync, mask, nullptr, nullptr, 0, 0, 32, false});
}

namespace sluice::simt::detail {
template <typename T>
T Shuffle(WarpOpKind kind, unsigned mask, T var, int arg, int width) {
  static_assert(std::is_trivially_copyable_v<T>, "shuffled values are copied as bytes");
  T out = var;
  WarpCollective({kind, mask, &var, &out, sizeof(T), arg, width, false});
  return out;
}
}  // namespace sluice::simt::detail

template <typename T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize) {
  return ::sluice::simt::detail::Shuffle(::sluice::simt::detail::WarpOpKind::kShflIdx, mask,
                                         var, src_lane, width);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return ::sluice::simt::detail::Shuffle(::sluice::simt::detail::WarpOpKind::kShflUp, mask, var,
                                         static_cast<int>(delta), width);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return ::sluice::simt::detail::Shuffle(::sluice::simt::detail::WarpOpKind::kShflDown, mask,
                                         var, static_cast<int>(delta), width);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize) {
  return ::sluice::simt::detail::Shuffle(::sluice::simt::detail::WarpOpKind::kShflXor, mask,
                                         var, lane_mask, width);
}

inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return ::sluice::simt::detail::WarpCollective({::sluice::simt::detail::WarpOpKind::kBallot,
                                                 mask, nullptr, nullptr, 0, 0, 32,
                                                 predicate != 0});
}
inline int __any_sync(unsigned mask, int predicate) {
  return __ballot_sync(mask, predicate) != 0;
}
inline int __all_sync(unsigned mask, int predicate) {
  return __ballot_sync(mask, predicate) == ::sluice::simt::detail::PresentLanes(mask);
}

// Atomics return the old value, as CUDA's do; relaxed, as CUDA's are.
template <typename T>
T atomicAdd(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_add(value, std::memory_order_relaxed);
}

// Math intrinsics: the fast CUDA forms computed with the precise host functions (a GPU's
// approximations are one of the things only a GPU run checks, docs/gpu.md).
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }

// CUDA's global integer and floating min/max (crt/math_functions.hpp), the overloads kernels
// call unqualified. Mixed signed/unsigned pairs compare as unsigned, as CUDA's do.
#define SLUICE_SIMT_MIN_MAX(T)                     \
  inline T min(T a, T b) { return b < a ? b : a; } \
  inline T max(T a, T b) { return a < b ? b : a; }
SLUICE_SIMT_MIN_MAX(int)
SLUICE_SIMT_MIN_MAX(unsigned)
SLUICE_SIMT_MIN_MAX(long)
SLUICE_SIMT_MIN_MAX(unsigned long)
SLUICE_SIMT_MIN_MAX(long long)
SLUICE_SIMT_MIN_MAX(unsigned long long)
#undef SLUICE_SIMT_MIN_MAX
inline unsigned min(int a, unsigned b) { return ::min(static_cast<unsigned>(a), b); }
inline unsigned min(unsigned a, int b) { return ::min(a, static_cast<unsigned>(b)); }
inline unsigned max(int a, unsigned b) { return ::max(static_cast<unsigned>(a), b); }
inline unsigned max(unsigned a, int b) { return ::max(a, static_cast<unsigned>(b)); }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }

// The explicitly rounded arithmetic intrinsics (round to nearest even; _rn only, the kernels use
// no other rounding mode). Host float and double arithmetic is IEEE binary32/64 rounded to
// nearest already, provided it is not evaluated in a wider format (FLT_EVAL_METHOD 0: SSE, NEON)
// and the compiler does not contract a product and a sum into one FMA rounding, which is what the
// _rn forms promise a kernel. GCC contracts across statements by default in C++ on any target
// with FMA (aarch64, x86-64 with -mfma/-march=native), so simt_dep gives every SIMT build
// -ffp-contract=off (gpu/simt/meson.build): one flag, no barriers in the functions, and every
// kernel's plain arithmetic then rounds the same on every host, whatever -march says.
static_assert(FLT_EVAL_METHOD == 0, "the _rn intrinsics need float/double evaluated as such");
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float x) { return std::sqrt(x); }
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __dsqrt_rn(double x) { return std::sqrt(x); }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }

#endif  // __CUDACC__
