// Linear pieces around the GEMMs (gpu/model/ops.h): the bf16 cast of GEMM inputs, bias adds and
// the add of a weight gradient into the flat buffer.
#include "gpu/model/ops.h"

#include "gpu/model/common.cuh"

namespace sluice::gpu::model {
namespace {

using internal::BF, internal::GridFor, internal::S, internal::kThreads;

// ---- conversions ----
__global__ void CastToBf16Kernel(__nv_bfloat16* out, const float* in, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16_rn(in[i]);
}

__global__ void CastRowsToBf16Kernel(__nv_bfloat16* out, int64_t out_ld, const float* in, size_t n,
                                     int cols) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i / cols * out_ld + i % cols] = __float2bfloat16_rn(in[i]);
}

// out[o][j][i] = in[o][i][j] for in [rows, a, b]: a weight whose GEMM reads its inner two axes in
// the other order (conv2's taps before its input channels).
__global__ void CastToBf16SwapInnerKernel(__nv_bfloat16* out, const float* in, size_t n, int a,
                                          int b) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t ab = static_cast<size_t>(a) * b, o = i / ab;
    const int j = (i % ab) / a, k = i % a;  // out index (o, j, k)
    out[i] = __float2bfloat16_rn(in[o * ab + static_cast<size_t>(k) * b + j]);
  }
}

// g[o][i][j] += src[o][j][i]: that weight's gradient, computed in the GEMM's order, added back.
__global__ void AddToSwapInnerKernel(float* g, const float* src, size_t n, int a, int b) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t ab = static_cast<size_t>(a) * b, o = i / ab;
    const int k = (i % ab) / b, j = i % b;  // g index (o, k, j)
    g[i] += src[o * ab + static_cast<size_t>(j) * a + k];
  }
}

// ---- bias ----
__global__ void AddBiasKernel(float* x, __nv_bfloat16* xb, const float* bias, size_t n, int C) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float v = x[i] + bias[i % C];
    x[i] = v;
    if (xb) xb[i] = __float2bfloat16_rn(v);
  }
}

__global__ void AddToKernel(float* dst, const float* src, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    dst[i] += src[i];
}

}  // namespace

Status CastToBf16(Bf16* out, const float* in, size_t n, void* stream) {
  if (n == 0) return Status::OK();
  SLUICE_LAUNCH(CastToBf16Kernel, GridFor(n, kThreads), kThreads, 0, S(stream))(BF(out), in, n);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status CastRowsToBf16(Bf16* out, int64_t out_ld, const float* in, int rows, int cols,
                      void* stream) {
  if (rows < 0 || cols < 0 || out_ld < cols)
    return Status::InvalidArgument("cast rows: negative size or out_ld < cols");
  const size_t n = static_cast<size_t>(rows) * cols;
  if (n == 0) return Status::OK();
  SLUICE_LAUNCH(CastRowsToBf16Kernel, GridFor(n, kThreads), kThreads, 0, S(stream))(
      BF(out), out_ld, in, n, cols);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status CastToBf16SwapInner(Bf16* out, const float* in, int rows, int a, int b, void* stream) {
  if (rows < 0 || a < 0 || b < 0) return Status::InvalidArgument("cast swap inner: negative size");
  const size_t n = static_cast<size_t>(rows) * a * b;
  if (n == 0) return Status::OK();
  SLUICE_LAUNCH(CastToBf16SwapInnerKernel, GridFor(n, kThreads), kThreads, 0, S(stream))(
      BF(out), in, n, a, b);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status AddToSwapInner(float* dst, const float* src, int rows, int a, int b, void* stream) {
  if (rows < 0 || a < 0 || b < 0) return Status::InvalidArgument("add swap inner: negative size");
  const size_t n = static_cast<size_t>(rows) * a * b;
  if (n == 0) return Status::OK();
  SLUICE_LAUNCH(AddToSwapInnerKernel, GridFor(n, kThreads), kThreads, 0, S(stream))(
      dst, src, n, a, b);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status AddTo(float* dst, const float* src, size_t n, void* stream) {
  if (n == 0) return Status::OK();
  SLUICE_LAUNCH(AddToKernel, GridFor(n, kThreads), kThreads, 0, S(stream))(dst, src, n);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status AddBias(float* x, Bf16* x_bf16, const float* bias, int N, int C, void* stream) {
  const size_t n = static_cast<size_t>(N) * C;
  if (n == 0) return Status::OK();
  SLUICE_LAUNCH(AddBiasKernel, GridFor(n, kThreads), kThreads, 0, S(stream))
  (x, BF(x_bf16), bias, n, C);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

}  // namespace sluice::gpu::model
