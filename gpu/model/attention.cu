#include "gpu/model/attention.h"

#include <cmath>

#include "gpu/model/common.cuh"

namespace sluice::gpu::model {
namespace {

using internal::BF;
using internal::GridFor;
using internal::S;
using internal::WarpRowsGrid;
using internal::kThreads;

// Offset in a [B, H, Tp, hs] tensor (attention.h: Tp >= T rows per head) of column
// c = h * hs + e of row t < Tp of batch entry b.
__device__ __forceinline__ size_t HeadMajorPadded(int b, int t, int c, int Tp, int H, int hs) {
  return ((static_cast<size_t>(b) * H + c / hs) * Tp + t) * hs + c % hs;
}
// The same for row bt = b * T + t of [B, T, C].
__device__ __forceinline__ size_t HeadMajor(size_t bt, int c, int T, int Tp, int H, int hs) {
  return HeadMajorPadded(bt / T, bt % T, c, Tp, H, hs);
}

// qkv [B, T, 3C] (+ bias) -> q, k, v [B, H, Tp, hs] bf16, rows T..Tp-1 zero.
__global__ void SplitHeadsKernel(__nv_bfloat16* q, __nv_bfloat16* k, __nv_bfloat16* v,
                                 const float* qkv, const float* bias, int B, int T, int Tp, int C,
                                 int H) {
  const int hs = C / H;
  const size_t n = static_cast<size_t>(B) * Tp * 3 * C;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const int j = i % (3 * C);
    const int t = (i / (3 * C)) % Tp;
    const int b = i / (static_cast<size_t>(3) * C * Tp);
    const int which = j / C;
    float val = 0.0f;
    if (t < T) {
      const size_t src = (static_cast<size_t>(b) * T + t) * 3 * C + j;
      val = bias ? qkv[src] + bias[j] : qkv[src];
    }
    __nv_bfloat16* dst = which == 0 ? q : which == 1 ? k : v;
    dst[HeadMajorPadded(b, t, j % C, Tp, H, hs)] = __float2bfloat16_rn(val);
  }
}

// src [B, H, Tp, hs] fp32 -> dst [B, T, C] (bf16, and fp32 when dst_f is set).
__global__ void MergeHeadsKernel(__nv_bfloat16* dst_b, float* dst_f, const float* src, int B, int T,
                                 int Tp, int C, int H) {
  const int hs = C / H;
  const size_t n = static_cast<size_t>(B) * T * C;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float val = src[HeadMajor(i / C, i % C, T, Tp, H, hs)];
    if (dst_b) dst_b[i] = __float2bfloat16_rn(val);
    if (dst_f) dst_f[i] = val;
  }
}

// dout [B, T, C] fp32 -> dy [B, H, Tp, hs] bf16, rows T..Tp-1 zero.
__global__ void SplitGradKernel(__nv_bfloat16* dy, const float* dout, int B, int T, int Tp, int C,
                                int H) {
  const int hs = C / H;
  const size_t n = static_cast<size_t>(B) * Tp * C;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const int c = i % C;
    const int t = (i / C) % Tp;
    const int b = i / (static_cast<size_t>(C) * Tp);
    const float val = t < T ? dout[(static_cast<size_t>(b) * T + t) * C + c] : 0.0f;
    dy[HeadMajorPadded(b, t, c, Tp, H, hs)] = __float2bfloat16_rn(val);
  }
}

// dq, dk, dv [B, H, Tp, hs] -> dqkv [B, T, 3C].
__global__ void MergeQkvGradKernel(float* dqkv, __nv_bfloat16* dqkv_b, const float* dq,
                                   const float* dk, const float* dv, int B, int T, int Tp, int C,
                                   int H) {
  const int hs = C / H;
  const size_t n = static_cast<size_t>(B) * T * 3 * C;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const int j = i % (3 * C);
    const int which = j / C;
    const float* src = which == 0 ? dq : which == 1 ? dk : dv;
    const float val = src[HeadMajor(i / (3 * C), j % C, T, Tp, H, hs)];
    if (dqkv) dqkv[i] = val;
    if (dqkv_b) dqkv_b[i] = __float2bfloat16_rn(val);
  }
}

// One warp per padded row (b, h, t), t < Tp, of a [B, H, Tp, Tp] score tensor: p_j =
// softmax_j(scale * s_j) over j < len, 0 beyond, for t < T; rows t >= T all 0, so that the
// GEMMs can run over Tp (a multiple of 8: cuBLASLt's aligned kernels) and add only zeros.
__global__ void MaskedSoftmaxKernel(float* probs, __nv_bfloat16* probs_b, const float* scores,
                                    const int32_t* lengths, int B, int H, int T, int Tp,
                                    float scale) {
  const size_t rows = static_cast<size_t>(B) * H * Tp;
  const size_t row = blockIdx.x * size_t(blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;  // uniform per warp
  const size_t at = row * Tp;
  float* p = probs + at;
  __nv_bfloat16* pb = probs_b + at;
  if (static_cast<int>(row % Tp) >= T) {
    for (int j = lane; j < Tp; j += 32) {
      p[j] = 0.0f;
      pb[j] = __float2bfloat16_rn(0.0f);
    }
    return;
  }
  const int b = row / (static_cast<size_t>(H) * Tp);
  const int len = min(max(lengths[b], 0), T);
  const float* s = scores + at;
  float m = -INFINITY;
  for (int j = lane; j < len; j += 32) m = fmaxf(m, s[j] * scale);
  m = internal::WarpMax(m);
  float sum = 0.0f;
  for (int j = lane; j < len; j += 32) sum += expf(s[j] * scale - m);
  sum = internal::WarpSum(sum);
  for (int j = lane; j < Tp; j += 32) {
    const float v = j < len ? expf(s[j] * scale - m) / sum : 0.0f;
    p[j] = v;
    pb[j] = __float2bfloat16_rn(v);
  }
}

// ds_j = scale * p_j (dp_j - sum_k p_k dp_k), bf16, over padded rows (b, h, t < Tp); masked keys
// have p = 0 and so ds = 0; the padding rows and columns are 0.
__global__ void SoftmaxBackwardKernel(__nv_bfloat16* ds, const float* dp, const float* probs,
                                      size_t rows, int T, int Tp, float scale) {
  const size_t row = blockIdx.x * size_t(blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const size_t at = row * Tp;
  if (static_cast<int>(row % Tp) >= T) {
    for (int j = lane; j < Tp; j += 32) ds[at + j] = __float2bfloat16_rn(0.0f);
    return;
  }
  const float* g = dp + at;
  const float* p = probs + at;
  float dot = 0.0f;
  for (int j = lane; j < T; j += 32) dot += p[j] * g[j];
  dot = internal::WarpSum(dot);
  for (int j = lane; j < Tp; j += 32)
    ds[at + j] = __float2bfloat16_rn(j < T ? p[j] * (g[j] - dot) * scale : 0.0f);
}

Status CheckDims(const AttentionDims& d) {
  if (d.B < 0 || d.T < 0 || d.C < 1 || d.H < 1 || d.C % d.H != 0)
    return Status::InvalidArgument("attention: bad dims (C must be a positive multiple of H)");
  if (static_cast<int64_t>(d.B) * d.H > 65535)
    return Status::InvalidArgument("attention: B * H > 65535");
  return Status::OK();
}

}  // namespace

Status AttentionForward(Gemm& gemm, Bf16* out_bf16, float* out_f32, const float* qkv,
                        const float* qkv_bias, const int32_t* lengths, const AttentionDims& d,
                        const AttentionSaved& sv, const AttentionScratch& sc, void* stream) {
  SLUICE_RETURN_IF_ERROR(CheckDims(d));
  if (d.B == 0 || d.T == 0) return Status::OK();
  const int hs = d.C / d.H, BH = d.B * d.H, T = d.T, Tp = d.Tp();
  const int64_t th = int64_t(Tp) * hs, tt = int64_t(Tp) * Tp;  // batch strides (padded)
  const size_t n3 = 3 * d.saved_elems();
  SLUICE_LAUNCH(SplitHeadsKernel, GridFor(n3, kThreads), kThreads, 0, S(stream))(
      BF(sv.q), BF(sv.k), BF(sv.v), qkv, qkv_bias, d.B, T, Tp, d.C, d.H);
  SLUICE_LAUNCH_CHECK();
  // The GEMMs run over Tp rather than T: the padding rows of q, k, v, dy, p and ds are zeros, so
  // they add nothing, and every extent is a multiple of 8, which cuBLASLt's 16-byte aligned
  // kernels need (at an odd T it picks 1-element aligned ones, several times slower).
  // scores[bh] = q[bh] k[bh]^T: [Tp, hs] x [hs, Tp].
  GemmShape s;
  s.M = Tp; s.N = Tp; s.K = hs; s.trans_b = true;
  s.ldc = Tp;
  s.batch = BH; s.stride_a = th; s.stride_b = th; s.stride_c = tt;
  SLUICE_RETURN_IF_ERROR(gemm.Run(s, sv.q, sv.k, sc.scores, stream));
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hs)));
  const size_t rows = static_cast<size_t>(BH) * Tp;
  SLUICE_LAUNCH(MaskedSoftmaxKernel, WarpRowsGrid(rows), kThreads, 0, S(stream))(
      sv.probs, BF(sv.probs_bf16), sc.scores, lengths, d.B, d.H, T, Tp, scale);
  SLUICE_LAUNCH_CHECK();
  // y[bh] = p[bh] v[bh]: [Tp, Tp] x [Tp, hs].
  GemmShape y;
  y.M = Tp; y.N = hs; y.K = Tp;
  y.lda = Tp;
  y.batch = BH; y.stride_a = tt; y.stride_b = th; y.stride_c = th;
  SLUICE_RETURN_IF_ERROR(gemm.Run(y, sv.probs_bf16, sv.v, sc.y, stream));
  SLUICE_LAUNCH(MergeHeadsKernel, GridFor(d.head_elems(), kThreads), kThreads, 0, S(stream))(
      BF(out_bf16), out_f32, sc.y, d.B, T, Tp, d.C, d.H);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status AttentionBackward(Gemm& gemm, float* dqkv, Bf16* dqkv_bf16, const float* dout,
                         const int32_t* lengths, const AttentionDims& d, const AttentionSaved& sv,
                         const AttentionScratch& sc, void* stream) {
  (void)lengths;  // the mask lives in the saved probabilities (exact zeros)
  SLUICE_RETURN_IF_ERROR(CheckDims(d));
  if (d.B == 0 || d.T == 0) return Status::OK();
  const int hs = d.C / d.H, BH = d.B * d.H, T = d.T, Tp = d.Tp();
  SLUICE_LAUNCH(SplitGradKernel, GridFor(d.saved_elems(), kThreads), kThreads, 0, S(stream))
  (BF(sc.dy), dout, d.B, T, Tp, d.C, d.H);
  SLUICE_LAUNCH_CHECK();
  const int64_t th = int64_t(Tp) * hs, tt = int64_t(Tp) * Tp;  // batch strides (padded)
  // dP = dy v^T: [Tp, hs] x [hs, Tp] (over Tp as in the forward).
  GemmShape dp;
  dp.M = Tp; dp.N = Tp; dp.K = hs; dp.trans_b = true;
  dp.ldc = Tp;
  dp.batch = BH; dp.stride_a = th; dp.stride_b = th; dp.stride_c = tt;
  SLUICE_RETURN_IF_ERROR(gemm.Run(dp, sc.dy, sv.v, sc.scores, stream));
  // dv = p^T dy: p stored [Tp(q), Tp(k)] is op(A) = A^T; [Tp(k), Tp(q)] x [Tp(q), hs].
  GemmShape dv;
  dv.M = Tp; dv.N = hs; dv.K = Tp; dv.trans_a = true;
  dv.lda = Tp;
  dv.batch = BH; dv.stride_a = tt; dv.stride_b = th; dv.stride_c = th;
  SLUICE_RETURN_IF_ERROR(gemm.Run(dv, sv.probs_bf16, sc.dy, sc.dv, stream));
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hs)));
  const size_t rows = static_cast<size_t>(BH) * Tp;
  SLUICE_LAUNCH(SoftmaxBackwardKernel, WarpRowsGrid(rows), kThreads, 0, S(stream))
  (BF(sc.ds), sc.scores, sv.probs, rows, T, Tp, scale);
  SLUICE_LAUNCH_CHECK();
  // dq = ds k: [Tp, Tp] x [Tp, hs].
  GemmShape dq;
  dq.M = Tp; dq.N = hs; dq.K = Tp;
  dq.lda = Tp;
  dq.batch = BH; dq.stride_a = tt; dq.stride_b = th; dq.stride_c = th;
  SLUICE_RETURN_IF_ERROR(gemm.Run(dq, sc.ds, sv.k, sc.dq, stream));
  // dk = ds^T q: [Tp(k), Tp(q)] x [Tp(q), hs].
  GemmShape dk = dv;
  SLUICE_RETURN_IF_ERROR(gemm.Run(dk, sc.ds, sv.q, sc.dk, stream));
  SLUICE_LAUNCH(MergeQkvGradKernel, GridFor(3 * d.head_elems(), kThreads), kThreads, 0, S(stream))(
      dqkv, BF(dqkv_bf16), sc.dq, sc.dk, sc.dv, d.B, T, Tp, d.C, d.H);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

}  // namespace sluice::gpu::model
