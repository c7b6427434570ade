// Dropout (gpu/model/ops.h): reference/dropout's counter-based hash, bit for bit.
#include "gpu/model/ops.h"

#include "gpu/model/common.cuh"

namespace sluice::gpu::model {
namespace {

using internal::BF, internal::GridFor, internal::S, internal::kThreads;

// ---- dropout: reference/dropout.cc's hash, word for word ----
__device__ __forceinline__ uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

// The per-key prefix of the hash is the same for every element: computed once per thread.
__device__ __forceinline__ uint64_t KeyHash(uint64_t seed, uint64_t step, uint32_t tensor_id) {
  uint64_t h = Mix(seed + kGolden);
  h = Mix(h ^ (step + kGolden));
  return Mix(h ^ (static_cast<uint64_t>(tensor_id) + kGolden));
}
__device__ __forceinline__ float Uniform(uint64_t key_hash, uint64_t index) {
  const uint64_t h = Mix(key_hash ^ (index + kGolden));
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

__global__ void DropoutForwardKernel(float* out, const float* in, size_t n, float p,
                                     reference::DropoutKey key) {
  const uint64_t kh = KeyHash(key.seed, key.step, key.tensor_id);
  const float scale = 1.0f / (1.0f - p);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    if (p <= 0.0f) {
      out[i] = in[i];
    } else {
      out[i] = Uniform(kh, i) >= p ? in[i] * scale : 0.0f;
    }
  }
}

__global__ void BiasDropoutResidualKernel(float* out, const float* in, const float* bias,
                                          const float* resid, size_t n, int C, float p,
                                          reference::DropoutKey key) {
  const uint64_t kh = KeyHash(key.seed, key.step, key.tensor_id);
  const float scale = 1.0f / (1.0f - p);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float y = bias ? in[i] + bias[i % C] : in[i];
    float d = y;
    // __fmul_rn: no FMA contraction with the residual add, so the sum rounds like the
    // reference's separate dropout and residual steps.
    if (p > 0.0f) d = Uniform(kh, i) >= p ? __fmul_rn(y, scale) : 0.0f;
    out[i] = d + resid[i];
  }
}

__global__ void DropoutBackwardKernel(float* din, __nv_bfloat16* din_b, const float* dout, size_t n,
                                      float p, reference::DropoutKey key) {
  const uint64_t kh = KeyHash(key.seed, key.step, key.tensor_id);
  const float scale = 1.0f / (1.0f - p);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    float v = dout[i];
    if (p > 0.0f) v = Uniform(kh, i) >= p ? dout[i] * scale : 0.0f;
    if (din) din[i] = v;
    if (din_b) din_b[i] = __float2bfloat16_rn(v);
  }
}

}  // namespace

Status DropoutForward(float* out, const float* in, size_t n, float p,
                      const reference::DropoutKey& key, void* stream) {
  if (n == 0) return Status::OK();
  if (!(p >= 0.0f && p < 1.0f)) return Status::InvalidArgument("dropout: p outside [0, 1)");
  SLUICE_LAUNCH(DropoutForwardKernel, GridFor(n, kThreads), kThreads, 0, S(stream))
  (out, in, n, p, key);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status BiasDropoutResidual(float* out, const float* in, const float* bias, const float* resid,
                           int N, int C, float p, const reference::DropoutKey& key, void* stream) {
  const size_t n = static_cast<size_t>(N) * C;
  if (n == 0) return Status::OK();
  if (!(p >= 0.0f && p < 1.0f)) return Status::InvalidArgument("dropout: p outside [0, 1)");
  SLUICE_LAUNCH(BiasDropoutResidualKernel, GridFor(n, kThreads), kThreads, 0, S(stream))
  (out, in, bias, resid, n, C, p, key);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status DropoutBackward(float* din, Bf16* din_bf16, const float* dout, size_t n, float p,
                       const reference::DropoutKey& key, void* stream) {
  if (n == 0) return Status::OK();
  if (!(p >= 0.0f && p < 1.0f)) return Status::InvalidArgument("dropout: p outside [0, 1)");
  SLUICE_LAUNCH(DropoutBackwardKernel, GridFor(n, kThreads), kThreads, 0, S(stream))
  (din, BF(din_bf16), dout, n, p, key);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

}  // namespace sluice::gpu::model
