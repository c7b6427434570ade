// The conv2d subsampling (gpu/model/ops.h): conv1 fused into conv2's im2col, conv1's weight
// gradient fused with col2im, conv2's GEMM epilogue, and the subsampled lengths; against
// reference/conv2d.
#include "gpu/model/ops.h"

#include <algorithm>

#include "gpu/model/common.cuh"
#include "reference/conv2d.h"

namespace sluice::gpu::model {
namespace {

using internal::BF, internal::GridFor, internal::S, internal::kThreads;

// ---- convolutions ----
// conv1 is never stored: its output (1 GB of fp32 at 32 x 1600 frames and 256 channels) would be
// written once and read back by im2col, and again, with its gradient, in the backward. Each
// reader recomputes the nine products instead, which costs far less than the bytes.

// conv1 + bias + ReLU at one output position (h, w) and channel c, in the order the reference
// sums (bias, then the taps row by row).
__device__ __forceinline__ float Conv1At(const float* xb, const float* w9, float bias, int F) {
  float acc = bias;
  for (int kh = 0; kh < 3; ++kh)
    for (int kw = 0; kw < 3; ++kw) acc += w9[kh * 3 + kw] * xb[kh * F + kw];
  return acc;
}

// col [(b, t, f), (kh, kw, ci)] = bf16(ReLU(conv1(x))[b, ci, 2t + kh, 2f + kw]). A block per
// row (b, t, f) at a time: the 7 x 7 features its nine conv1 windows read go to shared memory
// once, each thread keeps its channels' nine weights in registers and writes the nine taps, a
// warp's writes contiguous (channel fastest). Index arithmetic is per row, not per element: per
// element it cost more than the arithmetic and the bytes (seen on an H200).
__global__ void Conv1Im2ColKernel(__nv_bfloat16* col, const float* x, const float* w,
                                  const float* bias, int B, int T, int F, int C, int T2, int F2) {
  __shared__ float patch[49];
  const size_t K = static_cast<size_t>(C) * 9;
  const size_t rows = static_cast<size_t>(B) * T2 * F2;
  for (size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int f = r % F2;
    const int t = (r / F2) % T2;
    const int b = r / (static_cast<size_t>(F2) * T2);
    const float* x0 = x + (static_cast<size_t>(b) * T + 4 * t) * F + 4 * f;
    for (int k = threadIdx.x; k < 49; k += blockDim.x) patch[k] = x0[(k / 7) * F + k % 7];
    __syncthreads();
    __nv_bfloat16* out = col + r * K;
    for (int ci = threadIdx.x; ci < C; ci += blockDim.x) {
      float w9[9];
      for (int k = 0; k < 9; ++k) w9[k] = w[ci * 9 + k];
      const float b0 = bias[ci];
      for (int tap = 0; tap < 9; ++tap) {
        const float v = Conv1At(patch + (tap / 3) * 2 * 7 + (tap % 3) * 2, w9, b0, 7);
        out[tap * C + ci] = __float2bfloat16_rn(v > 0.0f ? v : 0.0f);
      }
    }
    __syncthreads();  // the patch is rewritten for the next row
  }
}

// Rows (b, h) of conv1's output per block of the weight-gradient kernel: fixed, so the partial
// sums, and with them the result, do not depend on the device.
constexpr int kConv1Rows = 16;

// conv1's weight and bias gradient straight from the conv2 GEMM's input gradient dcol
// [(b, t, f), (kh, kw, ci)]: per conv1 output (b, h, w) and channel c, the gradient is the sum of
// the (at most four) conv2 windows that read it (col2im), masked by the recomputed ReLU. Block
// (x, y): conv1 rows [x * kConv1Rows, ...) of the B * T1 rows, channels y * blockDim.x +
// threadIdx.x; each thread sums its channel's ten terms in double and writes them to
// partial[x][c][0..9]. The position loops carry their indices: no division per position.
__global__ void Conv1BackwardPartialKernel(double* partial, const float* dcol, const float* x,
                                           const float* w, const float* bias, int B, int T, int F,
                                           int C, int T1, int F1, int T2, int F2) {
  const int c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float w9[9];
  for (int k = 0; k < 9; ++k) w9[k] = w[c * 9 + k];
  const float b0 = bias[c];
  const size_t K = static_cast<size_t>(C) * 9;
  const int row0 = blockIdx.x * kConv1Rows;
  const int row1 = min(row0 + kConv1Rows, B * T1);
  double acc[10] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  for (int row = row0; row < row1; ++row) {
    const int b = row / T1, h = row % T1;
    const float* xrow = x + (static_cast<size_t>(b) * T + 2 * h) * F;
    const float* drow = dcol + static_cast<size_t>(b) * T2 * F2 * K + c;
    for (int wq = 0; wq < F1; ++wq) {
      float d = 0.0f;  // col2im, in the (kh, kw) order of the reference
      for (int kh = 0; kh < 3; ++kh) {
        const int th = h - kh;
        if (th < 0 || (th & 1) || (th >> 1) >= T2) continue;
        for (int kw = 0; kw < 3; ++kw) {
          const int tw = wq - kw;
          if (tw < 0 || (tw & 1) || (tw >> 1) >= F2) continue;
          d += drow[((th >> 1) * static_cast<size_t>(F2) + (tw >> 1)) * K + (kh * 3 + kw) * C];
        }
      }
      const float* xb = xrow + 2 * wq;
      if (!(Conv1At(xb, w9, b0, F) > 0.0f)) continue;
      const double dd = d;
      for (int kh = 0; kh < 3; ++kh)
        for (int kw = 0; kw < 3; ++kw) acc[kh * 3 + kw] += dd * xb[kh * F + kw];
      acc[9] += dd;
    }
  }
  double* out = partial + (static_cast<size_t>(blockIdx.x) * C + c) * 10;
  for (int k = 0; k < 10; ++k) out[k] = acc[k];
}

// dweight[c][k] (k < 9) and dbias[c] (k = 9) += the chunks' partial sums, in chunk order.
__global__ void Conv1BackwardFinishKernel(float* dw, float* db, const double* partial, int chunks,
                                          int C) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= C * 10) return;
  double total = 0;
  for (int k = 0; k < chunks; ++k) total += partial[static_cast<size_t>(k) * C * 10 + i];
  const int c = i / 10, k = i % 10;
  if (k < 9) dw[c * 9 + k] += static_cast<float>(total);
  else db[c] += static_cast<float>(total);
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

Status Conv1Im2Col(Bf16* col, const float* features, const float* weight, const float* bias, int B,
                   int T, int F, int C, void* stream) {
  const int T2 = reference::SubsampledLength(T), F2 = reference::SubsampledLength(F);
  if (B < 0 || T2 < 0 || F2 < 0 || C < 0)
    return Status::InvalidArgument("conv1 im2col: negative size");
  const size_t rows = static_cast<size_t>(B) * T2 * F2;
  if (rows == 0 || C == 0) return Status::OK();
  const int threads = std::min(kThreads, (C + 31) / 32 * 32);
  SLUICE_LAUNCH(Conv1Im2ColKernel, GridFor(rows, 1), threads, 0, S(stream))
  (BF(col), features, weight, bias, B, T, F, C, T2, F2);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

size_t Conv1BackwardScratch(int B, int T, int F, int C) {
  (void)F;
  const size_t rows = static_cast<size_t>(std::max(B, 0)) * reference::Conv2dOutSize(T);
  return (rows + kConv1Rows - 1) / kConv1Rows * std::max(C, 0) * 10;
}

Status Conv1Backward(float* dweight, float* dbias, const float* dcol, const float* features,
                     const float* weight, const float* bias, double* scratch, int B, int T, int F,
                     int C, void* stream) {
  const int T1 = reference::Conv2dOutSize(T), F1 = reference::Conv2dOutSize(F);
  const int T2 = reference::Conv2dOutSize(T1), F2 = reference::Conv2dOutSize(F1);
  if (B < 0 || C < 0) return Status::InvalidArgument("conv1 backward: negative size");
  if (static_cast<size_t>(B) * T1 * F1 == 0 || C == 0) return Status::OK();
  const int chunks = (B * T1 + kConv1Rows - 1) / kConv1Rows;
  const int threads = std::min(kThreads, (C + 31) / 32 * 32);
  const dim3 grid(chunks, (C + threads - 1) / threads);
  SLUICE_LAUNCH(Conv1BackwardPartialKernel, grid, threads, 0, S(stream))
  (scratch, dcol, features, weight, bias, B, T, F, C, T1, F1, T2, F2);
  SLUICE_LAUNCH_CHECK();
  SLUICE_LAUNCH(Conv1BackwardFinishKernel, (C * 10 + kThreads - 1) / kThreads, kThreads, 0,
                S(stream))
  (dweight, dbias, scratch, chunks, C);
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
