// The pointwise, row and convolution kernels of gpu/model/ops.h against reference/ on the
// same inputs. Tolerances by what the GPU does differently:
//   fp32 kernels (LayerNorm statistics, GELU in double, log_softmax, positions, bias and column
//     sums, ReLU masks): only summation order and libm ulps differ, 1e-5 relative;
//   dropout: bit for bit (the same integer hash, the same float comparisons);
//   bf16 outputs: one rounding to bf16, at most 2^-8 = 3.9e-3 relative per element (8 significant
//     bits), so 4e-3;
//   conv2 through im2col + a bf16 GEMM: both operands rounded to bf16 (2^-8 each at most) and fp32
//     accumulation: 1e-2 relative L2, 3e-2 of the scale per element.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "gpu/model/gemm.h"
#include "gpu/model/ops.h"
#include "gpu/model/scale.h"
#include "reference/activation.h"
#include "reference/conv2d.h"
#include "reference/dropout.h"
#include "reference/layernorm.h"
#include "reference/softmax.h"
#include "test_util.h"

namespace sluice::gpu::model {
namespace {

using namespace testing;

TEST(GpuOps, LayerNormForwardAndBackwardMatchReference) {
  SKIP_WITHOUT_GPU();
  const int N = 67, C = 96;  // C not a multiple of 32: the warp loop's tail
  std::vector<float> x = Random(N * C, 1, -3, 5), gamma = Random(C, 2, 0.5, 1.5),
                     beta = Random(C, 3);
  std::vector<float> y(N * C), mean(N), rstd(N);
  reference::LayerNormForward(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(),
                              beta.data(), N, C);
  auto dx_in = ToDevice(x), dg = ToDevice(gamma), db = ToDevice(beta);
  auto out_b = Zeros<Bf16>(N * C);
  auto out_f = Zeros<float>(N * C), dmean = Zeros<float>(N), drstd = Zeros<float>(N);
  ASSERT_OK(LayerNormForward(out_b.data(), out_f.data(), dmean.data(), drstd.data(), dx_in.data(),
                             dg.data(), db.data(), N, C, nullptr));
  ExpectClose("ln out fp32", ToHost(out_f, N * C), y, 1e-5, 1e-5);
  ExpectClose("ln out bf16", FromBf16(ToHost(out_b, N * C)), y, 4e-3, 4e-3);
  ExpectClose("ln mean", ToHost(dmean, N), mean, 1e-5, 1e-5);
  ExpectClose("ln rstd", ToHost(drstd, N), rstd, 1e-5, 1e-5);

  const std::vector<float> dy = Random(N * C, 4), din0 = Random(N * C, 5);
  std::vector<float> din = din0, dgamma(C, 0.5f), dbeta(C, -0.25f);
  std::vector<float> dgamma0 = dgamma, dbeta0 = dbeta;
  reference::LayerNormBackward(din.data(), dgamma.data(), dbeta.data(), dy.data(), x.data(),
                               gamma.data(), mean.data(), rstd.data(), N, C);
  auto d_dy = ToDevice(dy), d_din = ToDevice(din0), d_dg = ToDevice(dgamma0),
       d_db = ToDevice(dbeta0);
  auto scratch = Zeros<float>(ColumnSumScratch(N, C));
  ASSERT_OK(LayerNormBackward(d_din.data(), d_dg.data(), d_db.data(), d_dy.data(), dx_in.data(),
                              dg.data(), dmean.data(), drstd.data(), N, C, scratch.data(),
                              nullptr));
  ExpectClose("ln din (adds)", ToHost(d_din, N * C), din, 1e-5, 1e-5);
  ExpectClose("ln dgamma (adds)", ToHost(d_dg, C), dgamma, 1e-5, 1e-5);
  ExpectClose("ln dbeta (adds)", ToHost(d_db, C), dbeta, 1e-5, 1e-5);
}

TEST(GpuOps, BiasActivationAndBackwardMatchReference) {
  SKIP_WITHOUT_GPU();
  for (const reference::Activation act :
       {reference::Activation::kGelu, reference::Activation::kSwish}) {
    const std::string name = reference::ActivationName(act);
    SCOPED_TRACE(name);
    const int N = 33, C = 130;
    // Wide enough for Swish's sigmoid to take both of its branches far from 0.
    const std::vector<float> pre = Random(N * C, 1, -12, 12), bias = Random(C, 2);
    std::vector<float> h(N * C);
    for (int i = 0; i < N * C; ++i) h[i] = pre[i] + bias[i % C];
    std::vector<float> g(N * C);
    reference::ActivationForward(act, g.data(), h.data(), g.size());
    auto dpre = ToDevice(pre), dbias = ToDevice(bias);
    auto act_b = Zeros<Bf16>(N * C);
    auto act_f = Zeros<float>(N * C);
    ASSERT_OK(BiasActivationForward(act, dpre.data(), act_b.data(), act_f.data(), dbias.data(), N,
                                    C, nullptr));
    ExpectClose("pre + bias", ToHost(dpre, N * C), h, 1e-7, 1e-7);
    ExpectClose(name + " fp32", ToHost(act_f, N * C), g, 1e-6, 1e-6);
    ExpectClose(name + " bf16", FromBf16(ToHost(act_b, N * C)), g, 4e-3, 4e-3);

    const std::vector<float> dy = Random(N * C, 3);
    std::vector<float> dx(N * C, 0.0f);
    reference::ActivationBackward(act, dx.data(), dy.data(), h.data(), dx.size());
    auto ddy = ToDevice(dy);
    auto ddx = Zeros<float>(N * C);
    auto ddx_b = Zeros<Bf16>(N * C);
    ASSERT_OK(
        ActivationBackward(act, ddx.data(), ddx_b.data(), ddy.data(), dpre.data(), N * C, nullptr));
    ExpectClose(name + " backward", ToHost(ddx, N * C), dx, 1e-6, 1e-6);
    ExpectClose(name + " backward bf16", FromBf16(ToHost(ddx_b, N * C)), dx, 4e-3, 4e-3);
  }
}

TEST(GpuOps, DropoutMaskIsBitExact) {
  SKIP_WITHOUT_GPU();
  const size_t n = 100003;
  const std::vector<float> x = Random(n, 1);
  for (float p : {0.0f, 0.1f, 0.5f}) {
    const reference::DropoutKey key{12345, 77, 3};
    std::vector<float> want(n), dwant(n, 0.0f);
    reference::DropoutForward(want.data(), x.data(), n, p, key);
    reference::DropoutBackward(dwant.data(), x.data(), n, p, key);
    auto dx = ToDevice(x);
    auto out = Zeros<float>(n), din = Zeros<float>(n);
    ASSERT_OK(DropoutForward(out.data(), dx.data(), n, p, key, nullptr));
    ASSERT_OK(DropoutBackward(din.data(), nullptr, dx.data(), n, p, key, nullptr));
    const std::vector<float> got = ToHost(out, n), dgot = ToHost(din, n);
    size_t diff = 0, ddiff = 0;
    for (size_t i = 0; i < n; ++i) {
      diff += std::memcmp(&got[i], &want[i], 4) != 0;
      ddiff += std::memcmp(&dgot[i], &dwant[i], 4) != 0;
    }
    EXPECT_EQ(diff, 0u) << "p " << p;
    EXPECT_EQ(ddiff, 0u) << "p " << p;
  }
}

TEST(GpuOps, BiasDropoutResidualMatchesReferenceComposition) {
  SKIP_WITHOUT_GPU();
  const int N = 45, C = 64;
  const float p = 0.2f;
  const reference::DropoutKey key{9, 4, 1};
  const std::vector<float> in = Random(N * C, 1), bias = Random(C, 2), resid = Random(N * C, 3);
  std::vector<float> y(N * C);
  for (int i = 0; i < N * C; ++i) y[i] = in[i] + bias[i % C];
  reference::DropoutForward(y.data(), y.data(), y.size(), p, key);
  for (int i = 0; i < N * C; ++i) y[i] += resid[i];
  auto din = ToDevice(in), db = ToDevice(bias), dr = ToDevice(resid);
  auto out = Zeros<float>(N * C);
  ASSERT_OK(
      BiasDropoutResidual(out.data(), din.data(), db.data(), dr.data(), N, C, p, key, nullptr));
  ExpectClose("bias dropout residual", ToHost(out, N * C), y, 1e-7, 1e-7);
}

TEST(GpuOps, BiasLogSoftmaxMatchesReference) {
  SKIP_WITHOUT_GPU();
  for (int V : {2, 31, 1000}) {
    const int N = 19;
    const std::vector<float> x = Random(N * V, 1, -20, 20), bias = Random(V, 2);
    std::vector<float> xb(N * V), want(N * V);
    for (int i = 0; i < N * V; ++i) xb[i] = x[i] + bias[i % V];
    reference::LogSoftmaxForward(want.data(), xb.data(), N, V);
    auto dx = ToDevice(x), dbias = ToDevice(bias);
    auto out = Zeros<float>(N * V);
    ASSERT_OK(BiasLogSoftmaxForward(out.data(), dx.data(), V, dbias.data(), N, V, nullptr));
    ExpectClose("log_softmax V " + std::to_string(V), ToHost(out, N * V), want, 1e-6, 1e-6);
    // The same rows read ld = V + 5 apart (the head's padded output); the padding is never read.
    const int64_t ld = V + 5;
    std::vector<float> padded(static_cast<size_t>(N) * ld, std::nanf(""));
    for (int n = 0; n < N; ++n)
      std::copy(x.begin() + n * V, x.begin() + (n + 1) * V, padded.begin() + n * ld);
    auto dpadded = ToDevice(padded);
    auto out2 = Zeros<float>(N * V);
    ASSERT_OK(BiasLogSoftmaxForward(out2.data(), dpadded.data(), ld, dbias.data(), N, V, nullptr));
    ExpectClose("log_softmax V " + std::to_string(V) + " strided", ToHost(out2, N * V), want,
                1e-6, 1e-6);
  }
}

TEST(GpuOps, CastRowsToBf16WritesPaddedRowsAndLeavesThePadding) {
  SKIP_WITHOUT_GPU();
  const int rows = 5, cols = 11;
  const int64_t ld = 16;
  const std::vector<float> x = Random(rows * cols, 4);
  std::vector<float> sentinel(static_cast<size_t>(rows) * ld, 7.0f);  // bf16-exact
  auto dx = ToDevice(x);
  auto out = Zeros<Bf16>(rows * ld);
  auto dsentinel = ToDevice(sentinel);
  ASSERT_OK(CastToBf16(out.data(), dsentinel.data(), sentinel.size(), nullptr));
  ASSERT_OK(CastRowsToBf16(out.data(), ld, dx.data(), rows, cols, nullptr));
  const std::vector<float> got = FromBf16(ToHost(out, rows * ld));
  for (int r = 0; r < rows; ++r)
    for (int64_t c = 0; c < ld; ++c) {
      const float g = got[r * ld + c];
      if (c < cols)
        EXPECT_NEAR(g, x[r * cols + c], std::fabs(x[r * cols + c]) / 256) << r << "," << c;
      else
        EXPECT_EQ(g, 7.0f) << "padding " << r << "," << c << " was written";
    }
  EXPECT_FALSE(CastRowsToBf16(out.data(), 4, dx.data(), rows, cols, nullptr).ok());
}

TEST(GpuOps, BiasAndColumnSumsMatchHost) {
  SKIP_WITHOUT_GPU();
  const int N = 1000, C = 77;  // several row chunks, a partial column tile
  const std::vector<float> x = Random(N * C, 1), bias = Random(C, 2);
  std::vector<float> want(N * C), sums(C, 1.0f);
  for (int i = 0; i < N * C; ++i) want[i] = x[i] + bias[i % C];
  for (int c = 0; c < C; ++c) {
    double s = 0;
    for (int n = 0; n < N; ++n) s += x[n * C + c];
    sums[c] += static_cast<float>(s);
  }
  auto dx = ToDevice(x), db = ToDevice(bias);
  auto dsum = ToDevice(std::vector<float>(C, 1.0f));
  auto scratch = Zeros<float>(ColumnSumScratch(N, C));
  ASSERT_OK(ColumnSumAdd(dsum.data(), dx.data(), N, C, scratch.data(), nullptr));
  ExpectClose("column sums (add)", ToHost(dsum, C), sums, 1e-5, 1e-5);
  auto xb = Zeros<Bf16>(N * C);
  ASSERT_OK(AddBias(dx.data(), xb.data(), db.data(), N, C, nullptr));
  ExpectClose("add bias", ToHost(dx, N * C), want, 1e-7, 1e-7);
  ExpectClose("add bias bf16", FromBf16(ToHost(xb, N * C)), want, 4e-3, 4e-3);
}

// The data-parallel gradient weighting (scale.h): one rounded float multiply per element, bit
// for bit the CPU trainer's `grads[i] *= s`; s == 1 launches nothing, so even a signalling NaN
// (which a multiply would quiet) keeps its bits.
TEST(GpuOps, ScaleIsOneRoundedMultiplyAndOneIsANoOp) {
  SKIP_WITHOUT_GPU();
  const size_t n = 10007;  // a partial last block
  std::vector<float> x = Random(n, 1, -3, 3);
  const uint32_t snan_bits = 0x7f800001u;
  std::memcpy(&x[7], &snan_bits, 4);
  std::vector<float> want = x;
  const float s = 0.3f;
  for (float& v : want) v *= s;
  auto dx = ToDevice(x);
  ASSERT_OK(Scale(dx.data(), n, s, nullptr));
  std::vector<float> got = ToHost(dx, n);
  size_t diff = 0;
  for (size_t i = 0; i < n; ++i) diff += i != 7 && std::memcmp(&got[i], &want[i], 4) != 0;
  EXPECT_EQ(diff, 0u);
  EXPECT_TRUE(std::isnan(got[7]));

  auto dy = ToDevice(x);
  ASSERT_OK(Scale(dy.data(), n, 1.0f, nullptr));
  got = ToHost(dy, n);
  EXPECT_EQ(std::memcmp(got.data(), x.data(), n * 4), 0) << "s == 1 changed the bits";
}

TEST(GpuOps, PositionsMatchReferenceFormula) {
  SKIP_WITHOUT_GPU();
  const int B = 2, T = 300, C = 36;
  const std::vector<float> x = Random(B * T * C, 1), bias = Random(C, 2);
  std::vector<float> want(B * T * C);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < C; ++c) {
        const size_t i = (static_cast<size_t>(b) * T + t) * C + c;
        const double angle = t / std::pow(10000.0, static_cast<double>(c - c % 2) / C);
        want[i] =
            (x[i] + bias[c]) + static_cast<float>(c % 2 == 0 ? std::sin(angle) : std::cos(angle));
      }
  auto dx = ToDevice(x), db = ToDevice(bias);
  ASSERT_OK(AddBiasPositions(dx.data(), db.data(), B, T, C, nullptr));
  ExpectClose("positions", ToHost(dx, want.size()), want, 1e-6, 1e-6);
}

// [B, X, Y, F] -> [B, Y, X, F]: the subsampling's channel-major and time-major layouts.
std::vector<float> SwapMiddle(const std::vector<float>& v, int B, int X, int Y, int F) {
  std::vector<float> out(v.size());
  for (int b = 0; b < B; ++b)
    for (int x = 0; x < X; ++x)
      for (int y = 0; y < Y; ++y)
        for (int f = 0; f < F; ++f)
          out[((static_cast<size_t>(b) * Y + y) * X + x) * F + f] =
              v[((static_cast<size_t>(b) * X + x) * Y + y) * F + f];
  return out;
}

// reference::Conv2dForward then ReLU: in [B, Cin, H, W] -> [B, Cout, Ho, Wo].
std::vector<float> ConvRelu(const std::vector<float>& in, const std::vector<float>& w,
                            const std::vector<float>& bias, int B, int Cin, int H, int W,
                            int Cout) {
  const size_t n =
      static_cast<size_t>(B) * Cout * reference::Conv2dOutSize(H) * reference::Conv2dOutSize(W);
  std::vector<float> conv(n), out(n);
  reference::Conv2dForward(conv.data(), in.data(), w.data(), bias.data(), B, Cin, H, W, Cout);
  reference::ReluForward(out.data(), conv.data(), n);
  return out;
}

// conv2's kernel [Cout, Cin, 9] as its GEMM reads it, [Cout, 9, Cin].
std::vector<float> TapsFirst(const std::vector<float>& w, int C) {
  std::vector<float> out(w.size());
  for (int o = 0; o < C; ++o)
    for (int ci = 0; ci < C; ++ci)
      for (int tap = 0; tap < 9; ++tap)
        out[(static_cast<size_t>(o) * 9 + tap) * C + ci] =
            w[(static_cast<size_t>(o) * C + ci) * 9 + tap];
  return out;
}

// im2col of conv1's output r1 [B, C, T1, F1], taps first: col [(b, t, f), (kh, kw, ci)] =
// r1[b, ci, 2t + kh, 2f + kw].
std::vector<float> Im2ColTapsFirst(const std::vector<float>& r1, int B, int C, int T1, int F1,
                                   int T2, int F2) {
  const size_t K = 9 * static_cast<size_t>(C);
  std::vector<float> col(static_cast<size_t>(B) * T2 * F2 * K);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T2; ++t)
      for (int f = 0; f < F2; ++f)
        for (int tap = 0; tap < 9; ++tap)
          for (int ci = 0; ci < C; ++ci)
            col[((static_cast<size_t>(b) * T2 + t) * F2 + f) * K + tap * C + ci] =
                r1[((static_cast<size_t>(b) * C + ci) * T1 + 2 * t + tap / 3) * F1 + 2 * f +
                   tap % 3];
  return col;
}

// A dcol (Im2ColTapsFirst's layout) whose col2im is exactly dr1 [B, C, T1, F1]: each position's
// gradient in the first window that reads it, zeros elsewhere. *unread counts positions no window
// reads that have a gradient (there must be none).
std::vector<float> ExactDcol(const std::vector<float>& dr1, int B, int C, int T1, int F1, int T2,
                             int F2, int* unread) {
  const size_t K = 9 * static_cast<size_t>(C);
  std::vector<float> dcol(static_cast<size_t>(B) * T2 * F2 * K, 0.0f);
  *unread = 0;
  for (int b = 0; b < B; ++b)
    for (int ci = 0; ci < C; ++ci)
      for (int h = 0; h < T1; ++h)
        for (int w = 0; w < F1; ++w) {
          const float g = dr1[((static_cast<size_t>(b) * C + ci) * T1 + h) * F1 + w];
          bool placed = false;
          for (int kh = 0; kh < 3 && !placed; ++kh)
            for (int kw = 0; kw < 3 && !placed; ++kw) {
              const int th = h - kh, tw = w - kw;
              if (th < 0 || tw < 0 || th % 2 || tw % 2 || th / 2 >= T2 || tw / 2 >= F2) continue;
              dcol[((static_cast<size_t>(b) * T2 + th / 2) * F2 + tw / 2) * K + (kh * 3 + kw) * C +
                   ci] = g;
              placed = true;
            }
          *unread += !placed && g != 0.0f;
        }
  return dcol;
}

TEST(GpuOps, SubsamplingConvolutionsMatchReference) {
  SKIP_WITHOUT_GPU();
  // 2000 conv1 outputs: two of Conv1Backward's chunks.
  const int B = 2, T = 101, F = 41, C = 16;
  const int T1 = reference::Conv2dOutSize(T), F1 = reference::Conv2dOutSize(F);
  const int T2 = reference::Conv2dOutSize(T1), F2 = reference::Conv2dOutSize(F1);
  const std::vector<float> feats = Random(B * T * F, 1, -2, 2);
  const std::vector<float> w1 = Random(C * 9, 2), b1 = Random(C, 3, -0.1, 0.1);
  const std::vector<float> w2 = Random(C * C * 9, 4, -0.3, 0.3), b2 = Random(C, 5, -0.1, 0.1);
  // Reference: conv1, ReLU, conv2, ReLU, transpose to [B, T2, C, F2].
  const size_t n1 = static_cast<size_t>(B) * C * T1 * F1, n2 = static_cast<size_t>(B) * C * T2 * F2;
  const std::vector<float> r1 = ConvRelu(feats, w1, b1, B, 1, T, F, C);
  const std::vector<float> r2 = ConvRelu(r1, w2, b2, B, C, T1, F1, C);
  const std::vector<float> sub = SwapMiddle(r2, B, C, T2, F2);

  std::unique_ptr<Gemm> gemm;
  ASSERT_OK(Gemm::Create(32 << 20, &gemm));
  auto dfeats = ToDevice(feats), dw1 = ToDevice(w1), db1 = ToDevice(b1), db2 = ToDevice(b2);
  // conv2's kernel as its GEMM reads it, [Cout, 3, 3, Cin], against the host's permutation.
  const size_t K = 9 * static_cast<size_t>(C);
  const std::vector<float> w2_taps = TapsFirst(w2, C);
  auto dw2_f = ToDevice(w2);
  auto dw2 = Zeros<Bf16>(w2.size());
  ASSERT_OK(CastToBf16SwapInner(dw2.data(), dw2_f.data(), C, C, 9, nullptr));
  ExpectClose("conv2 weight, taps first", FromBf16(ToHost(dw2, w2.size())), RoundBf16(w2_taps), 0,
              0);
  // conv1 + ReLU inside im2col: col [(b, t, f), (kh, kw, ci)] = r1[b, ci, 2t + kh, 2f + kw].
  const int M2 = B * T2 * F2;
  const std::vector<float> want_col = Im2ColTapsFirst(r1, B, C, T1, F1, T2, F2);
  auto col = Zeros<Bf16>(M2 * K);
  ASSERT_OK(
      Conv1Im2Col(col.data(), dfeats.data(), dw1.data(), db1.data(), B, T, F, C, nullptr));
  ExpectClose("conv1 + relu + im2col", FromBf16(ToHost(col, M2 * K)), RoundBf16(want_col), 1e-2,
              1e-2);
  auto gout = Zeros<float>(static_cast<size_t>(M2) * C);
  const GemmShape conv2{.M = M2, .N = C, .K = 9 * C, .trans_b = true};
  ASSERT_OK(gemm->Run(conv2, col.data(), dw2.data(), gout.data(), nullptr));
  auto relu2 = Zeros<float>(n2);
  auto sub_b = Zeros<Bf16>(n2);
  ASSERT_OK(
      Conv2Epilogue(relu2.data(), sub_b.data(), gout.data(), db2.data(), B, C, T2, F2, nullptr));
  ExpectClose("conv2 + relu + transpose", ToHost(relu2, n2), sub, 1e-2, 3e-2);

  // Backward from d/d(sub), through the transpose and ReLU, conv2 (dW, db, din) and conv1 (dW, db).
  const std::vector<float> dsub = Random(n2, 6);
  const std::vector<float> dr2 = SwapMiddle(dsub, B, T2, C, F2);
  std::vector<float> dc2(n2, 0.0f), dr1(n1, 0.0f), dc1(n1, 0.0f);
  // conv2's ReLU mask is the GPU's own (its output, read back): where the bf16 conv2 output lies
  // within rounding of 0 its mask can differ from the reference's, and one flipped element moves
  // a bias or weight gradient by a whole |dsub| term (~5% L2 on this shape, simulated), which
  // would swamp the bf16 error these tolerances are for. conv1's is recomputed in fp32 on the
  // device, as the reference computes it.
  // The GPU's ReLU output back in [B, C, T2, F2].
  const std::vector<float> mask2 = SwapMiddle(ToHost(relu2, n2), B, T2, C, F2);
  reference::ReluBackward(dc2.data(), dr2.data(), mask2.data(), n2);
  std::vector<float> gw2(w2.size(), 0.0f), gb2(C, 0.0f), gw1(w1.size(), 0.0f), gb1(C, 0.0f);
  reference::Conv2dBackward(dr1.data(), gw2.data(), gb2.data(), dc2.data(), r1.data(), w2.data(), B,
                            C, T1, F1, C);
  reference::ReluBackward(dc1.data(), dr1.data(), r1.data(), n1);
  reference::Conv2dBackward<float>(nullptr, gw1.data(), gb1.data(), dc1.data(), feats.data(),
                                   w1.data(), B, 1, T, F, C);

  auto ddsub = ToDevice(dsub);
  auto dg = Zeros<float>(static_cast<size_t>(M2) * C);
  auto dg_b = Zeros<Bf16>(static_cast<size_t>(M2) * C);
  ASSERT_OK(Conv2EpilogueBackward(dg.data(), dg_b.data(), ddsub.data(), relu2.data(), B, C, T2, F2,
                                  nullptr));
  // Reference bias gradient of conv2 is the column sum of dg.
  auto gb2_d = Zeros<float>(C);
  auto scratch = Zeros<float>(ColumnSumScratch(M2, C));
  ASSERT_OK(ColumnSumAdd(gb2_d.data(), dg.data(), M2, C, scratch.data(), nullptr));
  ExpectClose("conv2 dbias", ToHost(gb2_d, C), gb2, 2e-2, 5e-2);
  // The weight gradient comes out of the GEMM taps first and is added back in PyTorch's order.
  auto gw2_taps = Zeros<float>(w2.size()), gw2_d = Zeros<float>(w2.size());
  const GemmShape dw{.M = C, .N = 9 * C, .K = M2, .trans_a = true};
  ASSERT_OK(gemm->Run(dw, dg_b.data(), col.data(), gw2_taps.data(), nullptr));
  ASSERT_OK(AddToSwapInner(gw2_d.data(), gw2_taps.data(), C, C, 9, nullptr));
  ExpectClose("conv2 dweight", ToHost(gw2_d, w2.size()), gw2, 2e-2, 5e-2);
  auto dcol = Zeros<float>(static_cast<size_t>(M2) * K);
  const GemmShape dx{.M = M2, .N = 9 * C, .K = C};
  ASSERT_OK(gemm->Run(dx, dg_b.data(), dw2.data(), dcol.data(), nullptr));
  auto conv1_scratch = Zeros<double>(Conv1BackwardScratch(B, T, F, C));
  auto gw1_d = Zeros<float>(w1.size()), gb1_d = Zeros<float>(C);
  ASSERT_OK(Conv1Backward(gw1_d.data(), gb1_d.data(), dcol.data(), dfeats.data(), dw1.data(),
                          db1.data(), conv1_scratch.data(), B, T, F, C, nullptr));
  ExpectClose("conv1 dweight", ToHost(gw1_d, w1.size()), gw1, 2e-2, 5e-2);
  ExpectClose("conv1 dbias", ToHost(gb1_d, C), gb1, 2e-2, 5e-2);

  // conv1's backward alone, from an fp32 dcol whose col2im is the reference's d/d(relu1)
  // exactly: fp32 exact up to the order of the sums.
  int unread = 0;
  auto ddcol_exact = ToDevice(ExactDcol(dr1, B, C, T1, F1, T2, F2, &unread));
  ASSERT_EQ(unread, 0) << "conv1 outputs read by no window have a gradient";
  auto gw1_e = Zeros<float>(w1.size()), gb1_e = Zeros<float>(C);
  ASSERT_OK(Conv1Backward(gw1_e.data(), gb1_e.data(), ddcol_exact.data(), dfeats.data(),
                          dw1.data(), db1.data(), conv1_scratch.data(), B, T, F, C, nullptr));
  ExpectClose("conv1 dweight (exact input)", ToHost(gw1_e, w1.size()), gw1, 1e-5, 1e-5);
  ExpectClose("conv1 dbias (exact input)", ToHost(gb1_e, C), gb1, 1e-5, 1e-5);
}

}  // namespace
}  // namespace sluice::gpu::model
