// LayerNorm forward and backward (gpu/model/ops.h), against reference/layernorm.
#include "gpu/model/ops.h"

#include "gpu/model/common.cuh"
#include "gpu/model/column_reduce.cuh"
#include "reference/layernorm.h"

namespace sluice::gpu::model {
namespace {

using internal::BF, internal::S, internal::WarpRowsGrid, internal::kThreads,
      internal::ColumnReduceAdd, internal::ReadValue;

// ---- LayerNorm: one warp per row, two passes (mean, then centred variance) in fp32 ----
__global__ void LayerNormForwardKernel(__nv_bfloat16* out_b, float* out_f, float* mean, float* rstd,
                                       const float* in, const float* gamma, const float* beta,
                                       int N, int C) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;  // whole warps leave together: row is uniform within a warp
  const float* x = in + static_cast<size_t>(row) * C;
  float s = 0.0f;
  for (int c = lane; c < C; c += 32) s += x[c];
  const float m = internal::WarpSum(s) / C;
  float v = 0.0f;
  for (int c = lane; c < C; c += 32) v += (x[c] - m) * (x[c] - m);
  const float var = internal::WarpSum(v) / C;
  const float r = 1.0f / sqrtf(var + static_cast<float>(reference::kLayerNormEps));
  for (int c = lane; c < C; c += 32) {
    const float y = (x[c] - m) * r * gamma[c] + beta[c];
    out_b[static_cast<size_t>(row) * C + c] = __float2bfloat16_rn(y);
    if (out_f) out_f[static_cast<size_t>(row) * C + c] = y;
  }
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

// dx += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * gamma.
__global__ void LayerNormBackwardKernel(float* din, const float* dout, const float* in,
                                        const float* gamma, const float* mean, const float* rstd,
                                        int N, int C) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const size_t base = static_cast<size_t>(row) * C;
  const float m = mean[row], r = rstd[row];
  float gs = 0.0f, gxs = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const float g = dout[base + c] * gamma[c];
    gs += g;
    gxs += g * (in[base + c] - m) * r;
  }
  const float g_mean = internal::WarpSum(gs) / C;
  const float gx_mean = internal::WarpSum(gxs) / C;
  for (int c = lane; c < C; c += 32) {
    const float xhat = (in[base + c] - m) * r;
    din[base + c] += r * (dout[base + c] * gamma[c] - g_mean - xhat * gx_mean);
  }
}

struct GammaGrad {
  const float *dout, *in, *mean, *rstd;
  int C;
  __device__ float operator()(int r, int c) const {
    const size_t i = static_cast<size_t>(r) * C + c;
    return dout[i] * ((in[i] - mean[r]) * rstd[r]);
  }
};

}  // namespace

Status LayerNormForward(Bf16* out_bf16, float* out_f32, float* mean, float* rstd, const float* in,
                        const float* gamma, const float* beta, int N, int C, void* stream) {
  if (N <= 0) return Status::OK();
  SLUICE_LAUNCH(LayerNormForwardKernel, WarpRowsGrid(N), kThreads, 0, S(stream))(
      BF(out_bf16), out_f32, mean, rstd, in, gamma, beta, N, C);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status LayerNormBackward(float* din, float* dgamma, float* dbeta, const float* dout,
                         const float* in, const float* gamma, const float* mean, const float* rstd,
                         int N, int C, float* scratch, void* stream) {
  if (N <= 0) return Status::OK();
  SLUICE_LAUNCH(LayerNormBackwardKernel, WarpRowsGrid(N), kThreads, 0, S(stream))(
      din, dout, in, gamma, mean, rstd, N, C);
  SLUICE_LAUNCH_CHECK();
  SLUICE_RETURN_IF_ERROR(
      ColumnReduceAdd(dgamma, N, C, scratch, GammaGrad{dout, in, mean, rstd, C}, stream));
  return ColumnReduceAdd(dbeta, N, C, scratch, ReadValue{dout, C}, stream);
}

}  // namespace sluice::gpu::model
