// GEMMs for the CUDA model through cuBLASLt: bf16 inputs, fp32 accumulation (CUBLAS_COMPUTE_32F),
// fp32 or bf16 output, row-major operands with optional transposes, strided batches (attention).
// One Gemm owns a cuBLASLt handle and a preallocated workspace; the descriptors and the
// heuristic's algorithm are cached per shape, so a steady-state step allocates nothing.
// CUDA-free header (streams are void*).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/status.h"
#include "gpu/model/device_array.h"

namespace sluice::gpu::model {

// Row-major C[M, N] = alpha * op(A)[M, K] * op(B)[K, N] + beta * C, per batch entry.
// op(A) = A when !trans_a (A stored [M, K]) and A^T when trans_a (A stored [K, M]); same for B.
// Leading dimensions are row strides in elements; 0 means packed (the stored row length).
struct GemmShape {
  int M = 0, N = 0, K = 0;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int batch = 1;                                   // strided batch count
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between batch entries
  float alpha = 1.0f;
  float beta = 0.0f;  // 1 accumulates into C (gradients); C is read only when beta != 0
};

class Gemm {
 public:
  // workspace_bytes: cuBLASLt's scratch (32 MiB is what Hopper kernels ask for at most).
  static Status Create(size_t workspace_bytes, std::unique_ptr<Gemm>* out);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  Status Run(const GemmShape& shape, const Bf16* A, const Bf16* B, float* C, void* stream);
  Status Run(const GemmShape& shape, const Bf16* A, const Bf16* B, Bf16* C, void* stream);

  // Tests: route every call through the plain CUDA kernel instead of cuBLASLt (the same
  // contract, fp32 accumulation), so the two can be compared. cuBLASLt shapes for which the
  // heuristic finds no algorithm use that kernel too (counted in fallback_calls()).
  void set_force_fallback(bool on) { force_fallback_ = on; }
  size_t cached_plans() const;
  size_t fallback_calls() const { return fallback_calls_; }
  // Calls an operand, leading dimension or batch stride of which is aligned to fewer than 16
  // bytes: cuBLASLt's tensor-core kernels load 16 bytes at a time, so such a shape gets a slower
  // algorithm or none (then the fallback kernel). The model pads its shapes so that none is.
  size_t under_aligned_calls() const { return under_aligned_calls_; }

 private:
  struct Impl;
  explicit Gemm(std::unique_ptr<Impl> impl);
  Status RunTyped(const GemmShape& shape, const Bf16* A, const Bf16* B, void* C, bool c_bf16,
                  void* stream);
  std::unique_ptr<Impl> impl_;
  bool force_fallback_ = false;
  size_t fallback_calls_ = 0;
  size_t under_aligned_calls_ = 0;
};

namespace internal {
// The fallback kernel (gemm_fallback.cu): a 16x16 tiled GEMM, fp32 accumulation, any strides.
Status FallbackGemm(const GemmShape& shape, const Bf16* A, const Bf16* B, void* C, bool c_bf16,
                    void* stream);
}  // namespace internal

}  // namespace sluice::gpu::model
