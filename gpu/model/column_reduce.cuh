// Internal to gpu/model/*.cu: the deterministic two-stage column reduction that bias, gamma and
// beta gradients share (reduce.cu, layernorm.cu). Kernels sit in an unnamed namespace, so each
// .cu that includes this gets its own copy. Never included by a public header.
#pragma once

#include "gpu/model/common.cuh"

namespace sluice::gpu::model::internal {
namespace {

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
  SLUICE_LAUNCH(ColumnPartialKernel<F>, dim3((C + 31) / 32, chunks), dim3(32, 8), 0, S(stream))
  (scratch, N, C, value);
  SLUICE_LAUNCH_CHECK();
  SLUICE_LAUNCH(ColumnFinishKernel, (C + kThreads - 1) / kThreads, kThreads, 0, S(stream))
  (dst, scratch, chunks, C);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

struct ReadValue {
  const float* in;
  int C;
  __device__ float operator()(int r, int c) const { return in[static_cast<size_t>(r) * C + c]; }
};

}  // namespace
}  // namespace sluice::gpu::model::internal
