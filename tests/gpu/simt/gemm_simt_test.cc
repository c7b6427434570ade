// gpu/model/gemm.cc on the SIMT build: Gemm through the CPU cuBLASLt (gpu/simt/cublaslt_host.cc)
// against Gemm with set_force_fallback(true), whose tiled kernel (gpu/model/gemm_fallback.cu)
// runs on the SIMT layer's fibers, on the shapes the model gives it (model.cc's linear layers
// forward and backward, attention.cu's batched products) and on the rest of gemm.h's contract
// (row strides, offset operands, beta, bf16 output). Both paths go through the same Gemm::Run,
// so this also checks gemm.cc's row-major -> column-major mapping, which the fallback lacks.
//
// Tolerance, per element: each result is an fp32 dot product of bf16 operands (exact in fp32),
// so it lies within g = (K + 3) 2^-24 (|alpha| sum_k |a b| + |beta c|) of the exact value
// (Higham, ch. 3: K products and sums, then alpha, beta c and their sum); a bf16 output adds
// one rounding, 2^-8 of the value. Each path is held to that bound against a double product,
// and the two to the sum of their bounds against each other. (Both sum fp32 products in
// ascending k, so here they come out bit-identical, which the test prints; only the bound is
// required, since a GPU's cuBLASLt sums in another order.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "assert_ok.h"
#include "features/half.h"
#include "gpu/model/device_array.h"
#include "gpu/model/gemm.h"
#include "gpu/simt/cuda_runtime_host.h"

namespace sluice::gpu::model {
namespace {

float RoundToBf16(float f) {
  uint16_t h;
  features::FloatToBFloat16(&f, 1, &h);
  return FloatFromBf16(Bf16{h});
}

std::vector<float> Random(size_t n, std::mt19937* rng, bool bf16) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = bf16 ? RoundToBf16(u(*rng)) : u(*rng);
  return v;
}

std::vector<Bf16> ToBf16(const std::vector<float>& v) {
  std::vector<Bf16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) features::FloatToBFloat16(&v[i], 1, &out[i].bits);
  return out;
}

// Elements a shape touches in a buffer of `rows` stored rows of `cols` (row stride ld), over the
// batch, plus `offset` leading elements.
size_t Extent(const GemmShape& s, int64_t rows, int64_t ld, int64_t stride, int64_t offset) {
  return static_cast<size_t>(offset + (s.batch - 1) * stride + rows * ld);
}

struct Case {
  std::string name;
  GemmShape s;
  bool bf16_out = false;
  int64_t offset_a = 0, offset_b = 0, offset_c = 0;  // elements before each operand
};

// The exact (double) row-major result of gemm.h's contract, with its error bound.
void Reference(const Case& c, const std::vector<float>& A, const std::vector<float>& B,
               const std::vector<float>& C0, std::vector<double>* want, std::vector<double>* tol) {
  const GemmShape& s = c.s;
  *want = std::vector<double>(C0.begin(), C0.end());
  tol->assign(C0.size(), 0.0);
  const double g = (s.K + 3) * std::ldexp(1.0, -24);
  for (int b = 0; b < s.batch; ++b)
    for (int m = 0; m < s.M; ++m)
      for (int n = 0; n < s.N; ++n) {
        double sum = 0, mag = 0;
        for (int k = 0; k < s.K; ++k) {
          const double a = s.trans_a ? A[c.offset_a + b * s.stride_a + k * s.lda + m]
                                     : A[c.offset_a + b * s.stride_a + m * s.lda + k];
          const double bb = s.trans_b ? B[c.offset_b + b * s.stride_b + n * s.ldb + k]
                                      : B[c.offset_b + b * s.stride_b + k * s.ldb + n];
          sum += a * bb;
          mag += std::abs(a * bb);
        }
        const size_t i = c.offset_c + b * s.stride_c + m * s.ldc + n;
        const double cv = s.beta != 0 ? C0[i] : 0.0;
        const double w = s.alpha * sum + s.beta * cv;
        double t = g * (std::abs(s.alpha) * mag + std::abs(s.beta * cv));
        if (c.bf16_out) t += std::ldexp(std::abs(w) + t, -8);
        (*want)[i] = w;
        (*tol)[i] = t;
      }
}

// Runs one case through `gemm` on `stream`; returns the whole C buffer (padding included).
std::vector<float> RunCase(Gemm& gemm, const Case& c, const std::vector<float>& A,
                           const std::vector<float>& B, const std::vector<float>& C0,
                           void* stream) {
  DeviceArray<Bf16> dA, dB;
  EXPECT_OK(dA.Allocate(A.size()));
  EXPECT_OK(dB.Allocate(B.size()));
  EXPECT_OK(dA.Upload(ToBf16(A).data(), A.size(), stream));
  EXPECT_OK(dB.Upload(ToBf16(B).data(), B.size(), stream));
  std::vector<float> out(C0.size());
  if (c.bf16_out) {
    DeviceArray<Bf16> dC;
    EXPECT_OK(dC.Allocate(C0.size()));
    EXPECT_OK(dC.Upload(ToBf16(C0).data(), C0.size(), stream));
    EXPECT_OK(gemm.Run(c.s, dA.data() + c.offset_a, dB.data() + c.offset_b, dC.data() + c.offset_c,
                       stream));
    std::vector<Bf16> h(C0.size());
    EXPECT_OK(dC.Download(h.data(), h.size(), stream));
    for (size_t i = 0; i < h.size(); ++i) out[i] = FloatFromBf16(h[i]);
  } else {
    DeviceArray<float> dC;
    EXPECT_OK(dC.Allocate(C0.size()));
    EXPECT_OK(dC.Upload(C0.data(), C0.size(), stream));
    EXPECT_OK(gemm.Run(c.s, dA.data() + c.offset_a, dB.data() + c.offset_b, dC.data() + c.offset_c,
                       stream));
    EXPECT_OK(dC.Download(out.data(), out.size(), stream));
  }
  return out;
}

class GemmSimtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(Gemm::Create(size_t{32} << 20, &lt_));
    ASSERT_OK(Gemm::Create(size_t{32} << 20, &fallback_));
    fallback_->set_force_fallback(true);
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    if (stream_ != nullptr) {
      EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess);
    }
  }

  // Fills in packed strides, runs both paths and checks them against the reference and each
  // other; untouched padding must come back as it went in.
  void Check(Case c) {
    GemmShape& s = c.s;
    const int64_t a_rows = s.trans_a ? s.K : s.M, a_cols = s.trans_a ? s.M : s.K;
    const int64_t b_rows = s.trans_b ? s.N : s.K, b_cols = s.trans_b ? s.K : s.N;
    if (s.lda == 0) s.lda = a_cols;
    if (s.ldb == 0) s.ldb = b_cols;
    if (s.ldc == 0) s.ldc = s.N;
    if (s.batch > 1 && s.stride_a == 0) s.stride_a = a_rows * s.lda;
    if (s.batch > 1 && s.stride_b == 0) s.stride_b = b_rows * s.ldb;
    if (s.batch > 1 && s.stride_c == 0) s.stride_c = s.M * s.ldc;
    std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(c.name)));
    const std::vector<float> A =
        Random(Extent(s, a_rows, s.lda, s.stride_a, c.offset_a), &rng, true);
    const std::vector<float> B =
        Random(Extent(s, b_rows, s.ldb, s.stride_b, c.offset_b), &rng, true);
    std::vector<float> C0 = Random(Extent(s, s.M, s.ldc, s.stride_c, c.offset_c), &rng, c.bf16_out);
    // "C is read only when beta != 0" (gemm.h; the model's scratch outputs are never cleared):
    // NaN there must not reach the result. Padding must come back NaN.
    if (s.beta == 0) C0.assign(C0.size(), std::numeric_limits<float>::quiet_NaN());
    std::vector<double> want, tol;
    Reference(c, A, B, C0, &want, &tol);
    const std::vector<float> lt = RunCase(*lt_, c, A, B, C0, stream_);
    const std::vector<float> fb = RunCase(*fallback_, c, A, B, C0, stream_);
    ASSERT_EQ(lt.size(), want.size());
    ASSERT_EQ(fb.size(), want.size());
    int bad = 0;
    size_t same = 0;
    double worst = 0;  // largest |lt - fb| as a fraction of the allowed difference
    for (size_t i = 0; i < want.size(); ++i) {
      const bool pad_nan = std::isnan(want[i]);  // untouched padding of a NaN-filled C
      const bool ok_lt = pad_nan ? std::isnan(lt[i]) : std::abs(lt[i] - want[i]) <= tol[i];
      const bool ok_fb = pad_nan ? std::isnan(fb[i]) : std::abs(fb[i] - want[i]) <= tol[i];
      const double diff = pad_nan ? 0.0 : std::abs(static_cast<double>(lt[i]) - fb[i]);
      const bool ok_pair = diff <= 2 * tol[i];
      if (tol[i] > 0) worst = std::max(worst, diff / (2 * tol[i]));
      same += lt[i] == fb[i] || pad_nan;
      if ((!ok_lt || !ok_fb || !ok_pair) && ++bad <= 5)
        ADD_FAILURE() << c.name << ": element " << i << ": cuBLASLt " << lt[i] << ", fallback "
                      << fb[i] << ", exact " << want[i] << " +- " << tol[i];
    }
    EXPECT_EQ(bad, 0) << c.name;
    ++checked_;
    std::printf(
        "  %-28s %7zu elements, %5.1f%% bit-identical, max |lt - fallback| = %.2f of the "
        "bound\n",
        c.name.c_str(), want.size(), 100.0 * same / want.size(), worst);
  }

  std::unique_ptr<Gemm> lt_, fallback_;
  cudaStream_t stream_ = nullptr;
  int checked_ = 0;
};

// model.cc's LinearNoBias (out[rows, out] = in W^T) and LinearBackward (dW = dout^T in,
// dx = dout W), attention.cu's batched scores, y, dP, dv, dq / dk.
void AddModelShapes(const std::string& tag, int rows, int C, int D, int V, int conv_rows,
                    int conv_in, int B, int H, int T, std::vector<Case>* out) {
  auto linear = [&](const std::string& name, int m, int in, int o) {
    Case f{tag + " " + name + " fwd", {}};
    f.s.M = m, f.s.N = o, f.s.K = in, f.s.trans_b = true;
    Case dw{tag + " " + name + " dW", {}};
    dw.s.M = o, dw.s.N = in, dw.s.K = m, dw.s.trans_a = true;
    Case dx{tag + " " + name + " dx", {}};
    dx.s.M = m, dx.s.N = in, dx.s.K = o;
    out->insert(out->end(), {f, dw, dx});
  };
  linear("qkv", rows, C, 3 * C);
  linear("fc1", rows, C, D);
  linear("fc2", rows, D, C);
  linear("out", rows, C, V);
  linear("conv2", conv_rows, conv_in, C);
  const int hs = C / H, BH = B * H;
  auto batched = [&](const std::string& name, int m, int n, int k, bool ta, bool tb) {
    Case c{tag + " attn " + name, {}};
    c.s.M = m, c.s.N = n, c.s.K = k, c.s.trans_a = ta, c.s.trans_b = tb, c.s.batch = BH;
    out->push_back(c);
  };
  batched("scores/dP", T, T, hs, false, true);
  batched("y/dq", T, hs, T, false, false);
  batched("dv/dk", T, hs, T, true, false);
}

// The model's shapes: ModelConfig::Tiny (C 32, 2 heads, d_ff 128) as the model tests run it
// (2 utterances of 97 frames and 20 mels: 23 frames after subsampling, conv2 over 23 x 4
// positions with 9 C inputs), and two layers' worth of ModelConfig::Small (C 256, 4 heads,
// d_ff 1024) at 2 x 25 frames.
TEST_F(GemmSimtTest, CublasLtAndFallbackKernelAgreeOnTheModelsShapes) {
  std::vector<Case> cases;
  AddModelShapes("tiny", 2 * 23, 32, 128, 11, 2 * 23 * 4, 9 * 32, 2, 2, 23, &cases);
  std::vector<Case> small;
  AddModelShapes("small", 2 * 25, 256, 1024, 33, 2 * 25 * 19, 9 * 256, 2, 4, 25, &small);
  // The largest of Small's kind each: qkv forward, fc1 dW, fc2 dx, the attention products.
  for (const Case& c : small)
    if (c.name == "small qkv fwd" || c.name == "small fc1 dW" || c.name == "small fc2 dx" ||
        c.name.find("attn") != std::string::npos)
      cases.push_back(c);
  for (const Case& c : cases) ASSERT_NO_FATAL_FAILURE(Check(c));
  EXPECT_EQ(lt_->fallback_calls(), 0u) << "every product must have run on the CPU cuBLASLt";
  EXPECT_EQ(fallback_->fallback_calls(), cases.size());
}

// The rest of gemm.h's contract on both paths: row strides longer than a row, batch gaps,
// operands at element (not 256-byte) alignment, beta 1, bf16 output, sizes 1 and odd.
TEST_F(GemmSimtTest, CublasLtAndFallbackKernelAgreeOnTheWholeContract) {
  std::vector<Case> cases;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool bf16_out : {false, true}) {
        Case c{std::string("odd") + (ta ? " T" : " N") + (tb ? "T" : "N") +
                   (bf16_out ? " bf16" : " f32"),
               {}};
        c.s.M = 37, c.s.N = 29, c.s.K = 53, c.s.trans_a = ta, c.s.trans_b = tb;
        c.s.lda = (ta ? 37 : 53) + 3, c.s.ldb = (tb ? 53 : 29) + 5, c.s.ldc = 29 + 2;
        c.s.batch = 3;
        c.s.stride_a = 60 * 60, c.s.stride_b = 60 * 60 + 7, c.s.stride_c = 37 * 31 + 1;
        c.s.alpha = -0.5f;
        c.s.beta = 1.0f;
        c.bf16_out = bf16_out;
        c.offset_a = 1, c.offset_b = 3, c.offset_c = 1;  // 2- and 4-byte aligned operands
        cases.push_back(c);
      }
  for (int m : {1, 2})
    for (int n : {1, 17})
      for (int k : {1, 16, 33}) {
        Case c{"M " + std::to_string(m) + " N " + std::to_string(n) + " K " + std::to_string(k),
               {}};
        c.s.M = m, c.s.N = n, c.s.K = k, c.s.trans_b = (k % 2) == 1;
        cases.push_back(c);
      }
  for (const Case& c : cases) ASSERT_NO_FATAL_FAILURE(Check(c));
  EXPECT_EQ(lt_->fallback_calls(), 0u) << "offset operands must still run on the CPU cuBLASLt";
  EXPECT_EQ(fallback_->fallback_calls(), cases.size());
}

}  // namespace
}  // namespace sluice::gpu::model
