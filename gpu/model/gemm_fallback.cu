// The plain GEMM behind Gemm's fallback path: 16x16 output tiles, operands staged through shared
// memory as fp32, fp32 accumulation. Slow but exact to the contract of gemm.h.
#include "gpu/model/common.cuh"
#include "gpu/model/gemm.h"

namespace sluice::gpu::model::internal {
namespace {

constexpr int kTile = 16;

// Element (r, c) of op(X) for a row-major stored X with row stride ld.
__device__ __forceinline__ float Load(const __nv_bfloat16* x, bool trans, int64_t ld, int r,
                                      int c) {
  return __bfloat162float(trans ? x[static_cast<int64_t>(c) * ld + r]
                                : x[static_cast<int64_t>(r) * ld + c]);
}

template <typename CT>
__global__ void GemmKernel(GemmShape s, const __nv_bfloat16* A, const __nv_bfloat16* B, CT* C) {
  __shared__ float as[kTile][kTile + 1];
  __shared__ float bs[kTile][kTile + 1];
  const int batch = blockIdx.z;
  A += batch * s.stride_a;
  B += batch * s.stride_b;
  C += batch * s.stride_c;
  const int row = blockIdx.y * kTile + threadIdx.y;  // in [0, M)
  const int col = blockIdx.x * kTile + threadIdx.x;  // in [0, N)
  float acc = 0.0f;
  for (int k0 = 0; k0 < s.K; k0 += kTile) {
    const int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    as[threadIdx.y][threadIdx.x] =
        row < s.M && ka < s.K ? Load(A, s.trans_a, s.lda, row, ka) : 0.0f;
    bs[threadIdx.y][threadIdx.x] =
        kb < s.K && col < s.N ? Load(B, s.trans_b, s.ldb, kb, col) : 0.0f;
    __syncthreads();
    for (int k = 0; k < kTile; ++k) acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < s.M && col < s.N) {
    CT* c = C + static_cast<int64_t>(row) * s.ldc + col;
    float v = s.alpha * acc;
    if (s.beta != 0.0f) v += s.beta * static_cast<float>(*c);
    *c = static_cast<CT>(v);
  }
}

}  // namespace

Status FallbackGemm(const GemmShape& s, const Bf16* A, const Bf16* B, void* C, bool c_bf16,
                    void* stream) {
  if (s.M == 0 || s.N == 0) return Status::OK();
  const dim3 block(kTile, kTile);
  const dim3 grid((s.N + kTile - 1) / kTile, (s.M + kTile - 1) / kTile, s.batch);
  if (grid.y > 65535 || grid.z > 65535)
    return Status::InvalidArgument("gemm fallback: grid too large");
  if (c_bf16)
    SLUICE_LAUNCH(GemmKernel<__nv_bfloat16>, grid, block, 0, S(stream))
    (s, BF(A), BF(B), static_cast<__nv_bfloat16*>(C));
  else
    SLUICE_LAUNCH(GemmKernel<float>, grid, block, 0, S(stream))
    (s, BF(A), BF(B), static_cast<float*>(C));
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

}  // namespace sluice::gpu::model::internal
