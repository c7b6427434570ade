// The conv2d subsampling (gpu/model/ops.h): conv1 + ReLU direct, im2col/col2im around the conv2
// GEMM and its epilogue, and the subsampled lengths; against reference/conv2d.
#include "gpu/model/ops.h"

#include "gpu/model/common.cuh"
#include "reference/conv2d.h"

namespace sluice::gpu::model {
namespace {

using internal::BF, internal::GridFor, internal::S, internal::kThreads;

// ---- convolutions ----
__global__ void Conv1ReluKernel(float* out, const float* x, const float* w, const float* bias,
                                int B, int T, int F, int C, int T1, int F1) {
  const size_t n = static_cast<size_t>(B) * C * T1 * F1;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const int f = i % F1;
    const int t = (i / F1) % T1;
    const int co = (i / (static_cast<size_t>(F1) * T1)) % C;
    const int b = i / (static_cast<size_t>(F1) * T1 * C);
    const float* xb = x + (static_cast<size_t>(b) * T + 2 * t) * F + 2 * f;
    float acc = bias[co];
    for (int kh = 0; kh < 3; ++kh)
      for (int kw = 0; kw < 3; ++kw) acc += w[co * 9 + kh * 3 + kw] * xb[kh * F + kw];
    out[i] = acc > 0.0f ? acc : 0.0f;
  }
}

// One block per output channel: dweight[co][k] += sum over (b, t, f) of d * x[window k],
// dbias[co] += sum of d, with d the masked gradient; double accumulation, fixed order.
__global__ void Conv1ReluBackwardKernel(float* dw, float* db, const float* dout, const float* out,
                                        const float* x, int B, int T, int F, int C, int T1,
                                        int F1) {
  __shared__ double sh[32];
  const int co = blockIdx.x;
  double acc[10] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const size_t per_b = static_cast<size_t>(T1) * F1;
  const size_t n = static_cast<size_t>(B) * per_b;
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
    const int b = i / per_b;
    const int t = (i % per_b) / F1;
    const int f = i % F1;
    const size_t o = (static_cast<size_t>(b) * C + co) * per_b + static_cast<size_t>(t) * F1 + f;
    if (!(out[o] > 0.0f)) continue;
    const double d = dout[o];
    const float* xb = x + (static_cast<size_t>(b) * T + 2 * t) * F + 2 * f;
    for (int kh = 0; kh < 3; ++kh)
      for (int kw = 0; kw < 3; ++kw) acc[kh * 3 + kw] += d * xb[kh * F + kw];
    acc[9] += d;
  }
  for (int k = 0; k < 10; ++k) {
    const double total = internal::BlockSum(acc[k], sh);
    if (threadIdx.x == 0) {
      if (k < 9) dw[co * 9 + k] += static_cast<float>(total);
      else db[co] += static_cast<float>(total);
    }
  }
}

__global__ void Im2ColKernel(__nv_bfloat16* col, const float* in, int B, int C, int H, int W,
                             int Ho, int Wo) {
  const size_t K = static_cast<size_t>(C) * 9;
  const size_t n = static_cast<size_t>(B) * Ho * Wo * K;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t r = i / K;
    const int k = i % K;
    const int ci = k / 9, kh = (k % 9) / 3, kw = k % 3;
    const int f = r % Wo;
    const int t = (r / Wo) % Ho;
    const int b = r / (static_cast<size_t>(Wo) * Ho);
    col[i] = __float2bfloat16_rn(
        in[((static_cast<size_t>(b) * C + ci) * H + 2 * t + kh) * W + 2 * f + kw]);
  }
}

__global__ void Col2ImKernel(float* din, const float* dcol, int B, int C, int H, int W, int Ho,
                             int Wo) {
  const size_t K = static_cast<size_t>(C) * 9;
  const size_t n = static_cast<size_t>(B) * C * H * W;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const int w = i % W;
    const int h = (i / W) % H;
    const int ci = (i / (static_cast<size_t>(W) * H)) % C;
    const int b = i / (static_cast<size_t>(W) * H * C);
    float acc = 0.0f;
    for (int kh = 0; kh < 3; ++kh) {
      const int th = h - kh;
      if (th < 0 || th % 2 != 0 || th / 2 >= Ho) continue;
      for (int kw = 0; kw < 3; ++kw) {
        const int tw = w - kw;
        if (tw < 0 || tw % 2 != 0 || tw / 2 >= Wo) continue;
        const size_t r = (static_cast<size_t>(b) * Ho + th / 2) * Wo + tw / 2;
        acc += dcol[r * K + ci * 9 + kh * 3 + kw];
      }
    }
    din[i] = acc;
  }
}

// out [B, Ho, C, Wo] from gemm [B, Ho, Wo, C].
__global__ void Conv2EpilogueKernel(float* out, __nv_bfloat16* out_b, const float* gemm,
                                    const float* bias, int B, int C, int Ho, int Wo) {
  const size_t n = static_cast<size_t>(B) * Ho * C * Wo;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const int f = i % Wo;
    const int c = (i / Wo) % C;
    const size_t bt = i / (static_cast<size_t>(Wo) * C);  // b * Ho + t
    const float v = gemm[(bt * Wo + f) * C + c] + bias[c];
    const float r = v > 0.0f ? v : 0.0f;
    out[i] = r;
    out_b[i] = __float2bfloat16_rn(r);
  }
}

__global__ void Conv2EpilogueBackwardKernel(float* dg, __nv_bfloat16* dg_b, const float* dout,
                                            const float* out, int B, int C, int Ho, int Wo) {
  const size_t n = static_cast<size_t>(B) * Ho * Wo * C;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const int c = i % C;
    const int f = (i / C) % Wo;
    const size_t bt = i / (static_cast<size_t>(C) * Wo);
    const size_t src = (bt * C + c) * Wo + f;
    const float v = out[src] > 0.0f ? dout[src] : 0.0f;
    dg[i] = v;
    dg_b[i] = __float2bfloat16_rn(v);
  }
}

__device__ __forceinline__ int ConvOut(int n) { return n < 3 ? 0 : (n - 3) / 2 + 1; }

__global__ void SubsampledLengthsKernel(int32_t* out_len, int32_t* bad, const int32_t* frames,
                                        int B, int T) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= B) return;
  int f = frames[b];
  if (f < 0 || f > T) {
    *bad = b + 1;
    f = f < 0 ? 0 : T;
  }
  out_len[b] = ConvOut(ConvOut(f));
}

}  // namespace

Status Conv1ReluForward(float* out, const float* features, const float* weight, const float* bias,
                        int B, int T, int F, int C, void* stream) {
  const int T1 = reference::Conv2dOutSize(T), F1 = reference::Conv2dOutSize(F);
  const size_t n = static_cast<size_t>(B) * C * T1 * F1;
  if (n == 0) return Status::OK();
  SLUICE_LAUNCH(Conv1ReluKernel, GridFor(n, kThreads), kThreads, 0, S(stream))
  (out, features, weight, bias, B, T, F, C, T1, F1);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status Conv1ReluBackward(float* dweight, float* dbias, const float* dout, const float* out,
                         const float* features, int B, int T, int F, int C, void* stream) {
  const int T1 = reference::Conv2dOutSize(T), F1 = reference::Conv2dOutSize(F);
  if (C <= 0) return Status::OK();
  SLUICE_LAUNCH(Conv1ReluBackwardKernel, C, kThreads, 0, S(stream))
  (dweight, dbias, dout, out, features, B, T, F, C, T1, F1);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status Im2Col(Bf16* col, const float* in, int B, int C, int H, int W, void* stream) {
  const int Ho = reference::Conv2dOutSize(H), Wo = reference::Conv2dOutSize(W);
  const size_t n = static_cast<size_t>(B) * Ho * Wo * C * 9;
  if (n == 0) return Status::OK();
  SLUICE_LAUNCH(Im2ColKernel, GridFor(n, kThreads), kThreads, 0, S(stream))
  (BF(col), in, B, C, H, W, Ho, Wo);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status Col2Im(float* din, const float* dcol, int B, int C, int H, int W, void* stream) {
  const int Ho = reference::Conv2dOutSize(H), Wo = reference::Conv2dOutSize(W);
  const size_t n = static_cast<size_t>(B) * C * H * W;
  if (n == 0) return Status::OK();
  SLUICE_LAUNCH(Col2ImKernel, GridFor(n, kThreads), kThreads, 0, S(stream))
  (din, dcol, B, C, H, W, Ho, Wo);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status Conv2Epilogue(float* out, Bf16* out_bf16, const float* gemm_out, const float* bias, int B,
                     int C, int Ho, int Wo, void* stream) {
  const size_t n = static_cast<size_t>(B) * Ho * Wo * C;
  if (n == 0) return Status::OK();
  SLUICE_LAUNCH(Conv2EpilogueKernel, GridFor(n, kThreads), kThreads, 0, S(stream))
  (out, BF(out_bf16), gemm_out, bias, B, C, Ho, Wo);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status Conv2EpilogueBackward(float* dgemm, Bf16* dgemm_bf16, const float* dout, const float* out,
                             int B, int C, int Ho, int Wo, void* stream) {
  const size_t n = static_cast<size_t>(B) * Ho * Wo * C;
  if (n == 0) return Status::OK();
  SLUICE_LAUNCH(Conv2EpilogueBackwardKernel, GridFor(n, kThreads), kThreads, 0, S(stream))(
      dgemm, BF(dgemm_bf16), dout, out, B, C, Ho, Wo);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status SubsampledLengths(int32_t* out_len, int32_t* bad, const int32_t* frames, int B, int T,
                         void* stream) {
  if (B <= 0) return Status::OK();
  SLUICE_LAUNCH(SubsampledLengthsKernel, (B + 127) / 128, 128, 0, S(stream))
  (out_len, bad, frames, B, T);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

}  // namespace sluice::gpu::model
