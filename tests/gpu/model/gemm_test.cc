// Gemm (cuBLASLt and its fallback kernel) against a double-precision product of the same
// bf16-rounded operands. The only error left is fp32 accumulation, so the tolerance is tight
// (1e-5 relative): any mix-up of the row-major/column-major mapping, a transpose, a leading
// dimension or a batch stride shows as an O(1) error.
#include <gtest/gtest.h>

#include <memory>

#include "gpu/model/gemm.h"
#include "test_util.h"

namespace sluice::gpu::model {
namespace {

using namespace testing;

std::vector<float> HostGemm(const GemmShape& s, const std::vector<float>& A,
                            const std::vector<float>& B, const std::vector<float>& C0) {
  std::vector<float> C = C0;
  const int64_t lda = s.trans_a ? s.M : s.K, ldb = s.trans_b ? s.K : s.N;
  for (int b = 0; b < s.batch; ++b)
    for (int m = 0; m < s.M; ++m)
      for (int n = 0; n < s.N; ++n) {
        double acc = 0;
        for (int k = 0; k < s.K; ++k) {
          const double a =
              s.trans_a ? A[b * s.stride_a + k * lda + m] : A[b * s.stride_a + m * lda + k];
          const double bb =
              s.trans_b ? B[b * s.stride_b + n * ldb + k] : B[b * s.stride_b + k * ldb + n];
          acc += a * bb;
        }
        float& c = C[b * s.stride_c + static_cast<int64_t>(m) * s.N + n];
        c = static_cast<float>(s.alpha * acc +
                               (s.beta != 0 ? s.beta * static_cast<double>(c) : 0.0));
      }
  return C;
}

void CheckShape(Gemm& gemm, GemmShape s, bool bf16_out) {
  const int64_t a_elems = static_cast<int64_t>(s.M) * s.K,
                b_elems = static_cast<int64_t>(s.K) * s.N;
  const int64_t c_elems = static_cast<int64_t>(s.M) * s.N;
  if (s.batch > 1) {
    s.stride_a = a_elems + 8;  // gaps between the batch entries, as attention's never have
    s.stride_b = b_elems + 16;
    s.stride_c = c_elems + 4;
  }
  const int64_t na = s.batch > 1 ? s.stride_a * s.batch : a_elems;
  const int64_t nb = s.batch > 1 ? s.stride_b * s.batch : b_elems;
  const int64_t nc = s.batch > 1 ? s.stride_c * s.batch : c_elems;
  const std::vector<float> A = RoundBf16(Random(na, 1)), B = RoundBf16(Random(nb, 2));
  std::vector<float> C0 = Random(nc, 3);
  if (bf16_out) C0 = RoundBf16(C0);
  const std::vector<float> want = HostGemm(s, A, B, C0);
  auto dA = ToDevice(ToBf16(A));
  auto dB = ToDevice(ToBf16(B));
  std::vector<float> got;
  if (bf16_out) {
    auto dC = ToDevice(ToBf16(C0));
    ASSERT_OK(gemm.Run(s, dA.data(), dB.data(), dC.data(), nullptr));
    got = FromBf16(ToHost(dC, nc));
  } else {
    auto dC = ToDevice(C0);
    ASSERT_OK(gemm.Run(s, dA.data(), dB.data(), dC.data(), nullptr));
    got = ToHost(dC, nc);
  }
  const std::string what = "M " + std::to_string(s.M) + " N " + std::to_string(s.N) + " K " +
                           std::to_string(s.K) + " ta " + std::to_string(s.trans_a) + " tb " +
                           std::to_string(s.trans_b) + " batch " + std::to_string(s.batch) +
                           " beta " + std::to_string(s.beta) +
                           (bf16_out ? " bf16 out" : " fp32 out");
  // bf16 output: one rounding of the result, 2^-8 relative at most.
  const double tol = bf16_out ? 4e-3 : 1e-5;
  ExpectClose(what, got, want, tol, tol);
}

void CheckAll(Gemm& gemm) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int batch : {1, 3})
        for (float beta : {0.0f, 1.0f}) {
          GemmShape s;
          s.M = 37;  // odd sizes: no dimension a multiple of the tile or of 8
          s.N = 29;
          s.K = 53;
          s.trans_a = ta;
          s.trans_b = tb;
          s.batch = batch;
          s.beta = beta;
          CheckShape(gemm, s, false);
          if (beta == 0) CheckShape(gemm, s, true);
        }
  GemmShape big;  // a linear layer's shape, aligned, through the tensor-core kernels
  big.M = 512;
  big.N = 256;
  big.K = 768;
  big.trans_b = true;
  CheckShape(gemm, big, false);
}

TEST(GpuGemm, CublasLtMatchesDoubleProductOfBf16Operands) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<Gemm> gemm;
  ASSERT_OK(Gemm::Create(32 << 20, &gemm));
  CheckAll(*gemm);
  const size_t plans = gemm->cached_plans();
  EXPECT_GT(plans, 0u);
  CheckAll(*gemm);  // the same shapes again: served from the cache
  EXPECT_EQ(gemm->cached_plans(), plans);
}

TEST(GpuGemm, FallbackKernelMatchesDoubleProductOfBf16Operands) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<Gemm> gemm;
  ASSERT_OK(Gemm::Create(32 << 20, &gemm));
  gemm->set_force_fallback(true);
  CheckAll(*gemm);
  EXPECT_GT(gemm->fallback_calls(), 0u);
}

}  // namespace
}  // namespace sluice::gpu::model
