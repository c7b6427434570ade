#include "gpu/model/ops.h"

#include <cmath>

#include "gpu/model/common.cuh"
#include "reference/conv2d.h"
#include "reference/layernorm.h"

namespace sluice::gpu::model {
namespace {

using internal::BF;
using internal::GridFor;
using internal::S;
using internal::WarpRowsGrid;
using internal::kThreads;

// ---- conversions ----
__global__ void CastToBf16Kernel(__nv_bfloat16* out, const float* in, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16_rn(in[i]);
}

// ---- column reductions: stage 1 sums chunks of kChunkRows rows per column into scratch
// [chunks, C]; stage 2 adds the chunks, in order, into dst. Deterministic, no atomics. ----
constexpr int kChunkRows = 256;
int Chunks(int N) { return (N + kChunkRows - 1) / kChunkRows; }

template <typename F>
__global__ void ColumnPartialKernel(float* partial, int N, int C, F value) {
  __shared__ float sh[8][33];
  const int c = blockIdx.x * 32 + threadIdx.x;
  const int r0 = blockIdx.y * kChunkRows;
  const int r1 = min(N, r0 + kChunkRows);
  float acc = 0.0f;
  if (c < C)
    for (int r = r0 + threadIdx.y; r < r1; r += 8) acc += value(r, c);
  sh[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float total = 0.0f;
    for (int y = 0; y < 8; ++y) total += sh[y][threadIdx.x];
    partial[static_cast<size_t>(blockIdx.y) * C + c] = total;
  }
}

__global__ void ColumnFinishKernel(float* dst, const float* partial, int chunks, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float total = 0.0f;
  for (int k = 0; k < chunks; ++k) total += partial[static_cast<size_t>(k) * C + c];
  dst[c] += total;
}

template <typename F>
Status ColumnReduceAdd(float* dst, int N, int C, float* scratch, F value, void* stream) {
  if (N <= 0 || C <= 0) return Status::OK();
  const int chunks = Chunks(N);
  if (chunks > 65535) return Status::InvalidArgument("column reduction: too many rows");
  ColumnPartialKernel<<<dim3((C + 31) / 32, chunks), dim3(32, 8), 0, S(stream)>>>(scratch, N, C, value);
  SLUICE_LAUNCH_CHECK();
  ColumnFinishKernel<<<(C + kThreads - 1) / kThreads, kThreads, 0, S(stream)>>>(dst, scratch, chunks, C);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

struct ReadValue {
  const float* in;
  int C;
  __device__ float operator()(int r, int c) const { return in[static_cast<size_t>(r) * C + c]; }
};

// ---- bias ----
__global__ void AddBiasKernel(float* x, __nv_bfloat16* xb, const float* bias, size_t n, int C) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float v = x[i] + bias[i % C];
    x[i] = v;
    if (xb) xb[i] = __float2bfloat16_rn(v);
  }
}

__global__ void AddToKernel(float* dst, const float* src, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    dst[i] += src[i];
}

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

// ---- Activations, evaluated in double like the reference, rounded once ----
// GELU, exact erf form.
struct Gelu {
  __device__ static double F(double x) { return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440)); }
  __device__ static double Grad(double x) {
    const double cdf = 0.5 * (1.0 + erf(x * 0.70710678118654752440));
    const double pdf = 0.39894228040143267794 * exp(-0.5 * x * x);
    return cdf + x * pdf;
  }
};
// Swish (SiLU): x * sigmoid(x), the sigmoid in the reference's overflow-free form.
struct Swish {
  __device__ static double Sigmoid(double x) {
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    const double e = exp(x);
    return e / (1.0 + e);
  }
  __device__ static double F(double x) { return x * Sigmoid(x); }
  __device__ static double Grad(double x) {
    const double s = Sigmoid(x);
    return s + x * s * (1.0 - s);
  }
};

template <typename Act>
__global__ void BiasActivationKernel(float* pre, __nv_bfloat16* act_b, float* act_f, const float* bias,
                                     size_t n, int C) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float h = bias ? pre[i] + bias[i % C] : pre[i];
    pre[i] = h;
    const float g = static_cast<float>(Act::F(h));
    act_b[i] = __float2bfloat16_rn(g);
    if (act_f) act_f[i] = g;
  }
}

template <typename Act>
__global__ void ActivationBackwardKernel(float* d, __nv_bfloat16* db, const float* dact, const float* pre,
                                         size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float v = static_cast<float>(dact[i] * Act::Grad(pre[i]));
    if (d) d[i] = v;
    if (db) db[i] = __float2bfloat16_rn(v);
  }
}

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

__global__ void DropoutForwardKernel(float* out, const float* in, size_t n, float p, reference::DropoutKey key) {
  const uint64_t kh = KeyHash(key.seed, key.step, key.tensor_id);
  const float scale = 1.0f / (1.0f - p);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    if (p <= 0.0f) {
      out[i] = in[i];
    } else {
      out[i] = Uniform(kh, i) >= p ? in[i] * scale : 0.0f;
    }
  }
}

__global__ void BiasDropoutResidualKernel(float* out, const float* in, const float* bias,
                                          const float* resid, size_t n, int C, float p, reference::DropoutKey key) {
  const uint64_t kh = KeyHash(key.seed, key.step, key.tensor_id);
  const float scale = 1.0f / (1.0f - p);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
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
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    float v = dout[i];
    if (p > 0.0f) v = Uniform(kh, i) >= p ? dout[i] * scale : 0.0f;
    if (din) din[i] = v;
    if (din_b) din_b[i] = __float2bfloat16_rn(v);
  }
}

// ---- log_softmax: one block per row, max in fp32, sum of exponentials in double ----
__global__ void BiasLogSoftmaxKernel(float* out, const float* in, const float* bias, int V) {
  __shared__ float shf[32];
  __shared__ double shd[32];
  const size_t base = static_cast<size_t>(blockIdx.x) * V;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < V; j += blockDim.x) m = fmaxf(m, in[base + j] + (bias ? bias[j] : 0.0f));
  m = internal::BlockMax(m, shf);
  double s = 0.0;
  for (int j = threadIdx.x; j < V; j += blockDim.x)
    s += exp(static_cast<double>(in[base + j] + (bias ? bias[j] : 0.0f)) - m);
  s = internal::BlockSum(s, shd);
  const double ls = log(s);
  for (int j = threadIdx.x; j < V; j += blockDim.x)
    out[base + j] = static_cast<float>(static_cast<double>(in[base + j] + (bias ? bias[j] : 0.0f)) - m - ls);
}

// ---- convolutions ----
__global__ void Conv1ReluKernel(float* out, const float* x, const float* w, const float* bias, int B,
                                int T, int F, int C, int T1, int F1) {
  const size_t n = static_cast<size_t>(B) * C * T1 * F1;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
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
                                        const float* x, int B, int T, int F, int C, int T1, int F1) {
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

__global__ void Im2ColKernel(__nv_bfloat16* col, const float* in, int B, int C, int H, int W, int Ho, int Wo) {
  const size_t K = static_cast<size_t>(C) * 9;
  const size_t n = static_cast<size_t>(B) * Ho * Wo * K;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const size_t r = i / K;
    const int k = i % K;
    const int ci = k / 9, kh = (k % 9) / 3, kw = k % 3;
    const int f = r % Wo;
    const int t = (r / Wo) % Ho;
    const int b = r / (static_cast<size_t>(Wo) * Ho);
    col[i] = __float2bfloat16_rn(in[((static_cast<size_t>(b) * C + ci) * H + 2 * t + kh) * W + 2 * f + kw]);
  }
}

__global__ void Col2ImKernel(float* din, const float* dcol, int B, int C, int H, int W, int Ho, int Wo) {
  const size_t K = static_cast<size_t>(C) * 9;
  const size_t n = static_cast<size_t>(B) * C * H * W;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
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
__global__ void Conv2EpilogueKernel(float* out, __nv_bfloat16* out_b, const float* gemm, const float* bias,
                                    int B, int C, int Ho, int Wo) {
  const size_t n = static_cast<size_t>(B) * Ho * C * Wo;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const int f = i % Wo;
    const int c = (i / Wo) % C;
    const size_t bt = i / (static_cast<size_t>(Wo) * C);  // b * Ho + t
    const float v = gemm[(bt * Wo + f) * C + c] + bias[c];
    const float r = v > 0.0f ? v : 0.0f;
    out[i] = r;
    out_b[i] = __float2bfloat16_rn(r);
  }
}

__global__ void Conv2EpilogueBackwardKernel(float* dg, __nv_bfloat16* dg_b, const float* dout, const float* out,
                                            int B, int C, int Ho, int Wo) {
  const size_t n = static_cast<size_t>(B) * Ho * Wo * C;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const int c = i % C;
    const int f = (i / C) % Wo;
    const size_t bt = i / (static_cast<size_t>(C) * Wo);
    const size_t src = (bt * C + c) * Wo + f;
    const float v = out[src] > 0.0f ? dout[src] : 0.0f;
    dg[i] = v;
    dg_b[i] = __float2bfloat16_rn(v);
  }
}

__global__ void AddBiasPositionsKernel(float* x, const float* bias, int B, int T, int C) {
  const size_t n = static_cast<size_t>(B) * T * C;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const int c = i % C;
    const int t = (i / C) % T;
    const double angle = t / pow(10000.0, static_cast<double>(c - c % 2) / C);
    float v = x[i];
    if (bias) v += bias[c];
    v += static_cast<float>(c % 2 == 0 ? sin(angle) : cos(angle));
    x[i] = v;
  }
}

__device__ __forceinline__ int ConvOut(int n) { return n < 3 ? 0 : (n - 3) / 2 + 1; }

__global__ void SubsampledLengthsKernel(int32_t* out_len, int32_t* bad, const int32_t* frames, int B, int T) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= B) return;
  int f = frames[b];
  if (f < 0 || f > T) {
    *bad = b + 1;
    f = f < 0 ? 0 : T;
  }
  out_len[b] = ConvOut(ConvOut(f));
}

__global__ void MeanKernel(float* out, const float* in, int B) {
  double s = 0.0;
  for (int b = 0; b < B; ++b) s += in[b];
  out[0] = static_cast<float>(s / B);
}

}  // namespace

Status CastToBf16(Bf16* out, const float* in, size_t n, void* stream) {
  if (n == 0) return Status::OK();
  CastToBf16Kernel<<<GridFor(n, kThreads), kThreads, 0, S(stream)>>>(BF(out), in, n);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

size_t ColumnSumScratch(int N, int C) {
  return N <= 0 || C <= 0 ? 0 : static_cast<size_t>(Chunks(N)) * C;
}

Status ColumnSumAdd(float* dst, const float* in, int N, int C, float* scratch, void* stream) {
  return ColumnReduceAdd(dst, N, C, scratch, ReadValue{in, C}, stream);
}

Status AddTo(float* dst, const float* src, size_t n, void* stream) {
  if (n == 0) return Status::OK();
  AddToKernel<<<GridFor(n, kThreads), kThreads, 0, S(stream)>>>(dst, src, n);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status AddBias(float* x, Bf16* x_bf16, const float* bias, int N, int C, void* stream) {
  const size_t n = static_cast<size_t>(N) * C;
  if (n == 0) return Status::OK();
  AddBiasKernel<<<GridFor(n, kThreads), kThreads, 0, S(stream)>>>(x, BF(x_bf16), bias, n, C);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status LayerNormForward(Bf16* out_bf16, float* out_f32, float* mean, float* rstd, const float* in,
                        const float* gamma, const float* beta, int N, int C, void* stream) {
  if (N <= 0) return Status::OK();
  LayerNormForwardKernel<<<WarpRowsGrid(N), kThreads, 0, S(stream)>>>(
      BF(out_bf16), out_f32, mean, rstd, in, gamma, beta, N, C);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status LayerNormBackward(float* din, float* dgamma, float* dbeta, const float* dout, const float* in,
                         const float* gamma, const float* mean, const float* rstd, int N, int C,
                         float* scratch, void* stream) {
  if (N <= 0) return Status::OK();
  LayerNormBackwardKernel<<<WarpRowsGrid(N), kThreads, 0, S(stream)>>>(
      din, dout, in, gamma, mean, rstd, N, C);
  SLUICE_LAUNCH_CHECK();
  SLUICE_RETURN_IF_ERROR(ColumnReduceAdd(dgamma, N, C, scratch, GammaGrad{dout, in, mean, rstd, C}, stream));
  return ColumnReduceAdd(dbeta, N, C, scratch, ReadValue{dout, C}, stream);
}

Status BiasActivationForward(reference::Activation act, float* pre, Bf16* act_bf16, float* act_f32,
                             const float* bias, int N, int C, void* stream) {
  const size_t n = static_cast<size_t>(N) * C;
  if (n == 0) return Status::OK();
  switch (act) {
    case reference::Activation::kGelu:
      BiasActivationKernel<Gelu><<<GridFor(n, kThreads), kThreads, 0, S(stream)>>>(pre, BF(act_bf16), act_f32,
                                                                                   bias, n, C);
      break;
    case reference::Activation::kSwish:
      BiasActivationKernel<Swish><<<GridFor(n, kThreads), kThreads, 0, S(stream)>>>(pre, BF(act_bf16), act_f32,
                                                                                    bias, n, C);
      break;
    default:
      return Status::Unsupported("BiasActivationForward: activation " + std::to_string(static_cast<int>(act)));
  }
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status ActivationBackward(reference::Activation act, float* dpre, Bf16* dpre_bf16, const float* dact,
                          const float* pre, size_t n, void* stream) {
  if (n == 0) return Status::OK();
  switch (act) {
    case reference::Activation::kGelu:
      ActivationBackwardKernel<Gelu><<<GridFor(n, kThreads), kThreads, 0, S(stream)>>>(dpre, BF(dpre_bf16), dact,
                                                                                       pre, n);
      break;
    case reference::Activation::kSwish:
      ActivationBackwardKernel<Swish><<<GridFor(n, kThreads), kThreads, 0, S(stream)>>>(dpre, BF(dpre_bf16), dact,
                                                                                        pre, n);
      break;
    default:
      return Status::Unsupported("ActivationBackward: activation " + std::to_string(static_cast<int>(act)));
  }
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status DropoutForward(float* out, const float* in, size_t n, float p, const reference::DropoutKey& key,
                      void* stream) {
  if (n == 0) return Status::OK();
  if (!(p >= 0.0f && p < 1.0f)) return Status::InvalidArgument("dropout: p outside [0, 1)");
  DropoutForwardKernel<<<GridFor(n, kThreads), kThreads, 0, S(stream)>>>(out, in, n, p, key);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status BiasDropoutResidual(float* out, const float* in, const float* bias, const float* resid, int N,
                           int C, float p, const reference::DropoutKey& key, void* stream) {
  const size_t n = static_cast<size_t>(N) * C;
  if (n == 0) return Status::OK();
  if (!(p >= 0.0f && p < 1.0f)) return Status::InvalidArgument("dropout: p outside [0, 1)");
  BiasDropoutResidualKernel<<<GridFor(n, kThreads), kThreads, 0, S(stream)>>>(out, in, bias, resid, n, C, p,
                                                                                key);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status DropoutBackward(float* din, Bf16* din_bf16, const float* dout, size_t n, float p,
                       const reference::DropoutKey& key, void* stream) {
  if (n == 0) return Status::OK();
  if (!(p >= 0.0f && p < 1.0f)) return Status::InvalidArgument("dropout: p outside [0, 1)");
  DropoutBackwardKernel<<<GridFor(n, kThreads), kThreads, 0, S(stream)>>>(din, BF(din_bf16), dout, n, p, key);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status BiasLogSoftmaxForward(float* out, const float* in, const float* bias, int N, int V, void* stream) {
  if (N <= 0) return Status::OK();
  if (N > 2147483647 || V < 1) return Status::InvalidArgument("log_softmax: bad shape");
  BiasLogSoftmaxKernel<<<N, kThreads, 0, S(stream)>>>(out, in, bias, V);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status Conv1ReluForward(float* out, const float* features, const float* weight, const float* bias, int B,
                        int T, int F, int C, void* stream) {
  const int T1 = reference::Conv2dOutSize(T), F1 = reference::Conv2dOutSize(F);
  const size_t n = static_cast<size_t>(B) * C * T1 * F1;
  if (n == 0) return Status::OK();
  Conv1ReluKernel<<<GridFor(n, kThreads), kThreads, 0, S(stream)>>>(out, features, weight, bias, B, T, F,
                                                                      C, T1, F1);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status Conv1ReluBackward(float* dweight, float* dbias, const float* dout, const float* out,
                         const float* features, int B, int T, int F, int C, void* stream) {
  const int T1 = reference::Conv2dOutSize(T), F1 = reference::Conv2dOutSize(F);
  if (C <= 0) return Status::OK();
  Conv1ReluBackwardKernel<<<C, kThreads, 0, S(stream)>>>(dweight, dbias, dout, out, features, B, T, F, C,
                                                          T1, F1);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status Im2Col(Bf16* col, const float* in, int B, int C, int H, int W, void* stream) {
  const int Ho = reference::Conv2dOutSize(H), Wo = reference::Conv2dOutSize(W);
  const size_t n = static_cast<size_t>(B) * Ho * Wo * C * 9;
  if (n == 0) return Status::OK();
  Im2ColKernel<<<GridFor(n, kThreads), kThreads, 0, S(stream)>>>(BF(col), in, B, C, H, W, Ho, Wo);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status Col2Im(float* din, const float* dcol, int B, int C, int H, int W, void* stream) {
  const int Ho = reference::Conv2dOutSize(H), Wo = reference::Conv2dOutSize(W);
  const size_t n = static_cast<size_t>(B) * C * H * W;
  if (n == 0) return Status::OK();
  Col2ImKernel<<<GridFor(n, kThreads), kThreads, 0, S(stream)>>>(din, dcol, B, C, H, W, Ho, Wo);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status Conv2Epilogue(float* out, Bf16* out_bf16, const float* gemm_out, const float* bias, int B, int C,
                     int Ho, int Wo, void* stream) {
  const size_t n = static_cast<size_t>(B) * Ho * Wo * C;
  if (n == 0) return Status::OK();
  Conv2EpilogueKernel<<<GridFor(n, kThreads), kThreads, 0, S(stream)>>>(out, BF(out_bf16), gemm_out, bias,
                                                                          B, C, Ho, Wo);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status Conv2EpilogueBackward(float* dgemm, Bf16* dgemm_bf16, const float* dout, const float* out, int B,
                             int C, int Ho, int Wo, void* stream) {
  const size_t n = static_cast<size_t>(B) * Ho * Wo * C;
  if (n == 0) return Status::OK();
  Conv2EpilogueBackwardKernel<<<GridFor(n, kThreads), kThreads, 0, S(stream)>>>(dgemm, BF(dgemm_bf16), dout,
                                                                                  out, B, C, Ho, Wo);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status AddBiasPositions(float* x, const float* bias, int B, int T, int C, void* stream) {
  const size_t n = static_cast<size_t>(B) * T * C;
  if (n == 0) return Status::OK();
  AddBiasPositionsKernel<<<GridFor(n, kThreads), kThreads, 0, S(stream)>>>(x, bias, B, T, C);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status SubsampledLengths(int32_t* out_len, int32_t* bad, const int32_t* frames, int B, int T, void* stream) {
  if (B <= 0) return Status::OK();
  SubsampledLengthsKernel<<<(B + 127) / 128, 128, 0, S(stream)>>>(out_len, bad, frames, B, T);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status MeanOf(float* out, const float* in, int B, void* stream) {
  if (B <= 0) return Status::InvalidArgument("MeanOf: empty");
  MeanKernel<<<1, 1, 0, S(stream)>>>(out, in, B);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

}  // namespace sluice::gpu::model
