// Every op's backward against central finite differences of the scalar r . forward(x) with a
// random r (so dout = r), on the double instantiation; plus float-vs-double forward agreement.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "reference/activation.h"
#include "reference/attention.h"
#include "reference/conv2d.h"
#include "reference/dropout.h"
#include "reference/layernorm.h"
#include "reference/linear.h"
#include "reference/residual.h"
#include "reference/softmax.h"
#include "gradcheck.h"

namespace sluice::reference {
namespace {

using testing::Dot;
using testing::ExpectGradientsClose;
using testing::NumericGradient;
using testing::RandomVector;
using Vec = std::vector<double>;

// A pointwise op's backward against finite differences on 20 inputs drawn with x_seed at
// `scale`, dout drawn with r_seed.
template <typename Forward, typename Backward>
void ExpectPointwiseGradient(Forward forward, Backward backward, uint64_t x_seed, uint64_t r_seed,
                             double scale = 1.0) {
  const int n = 20;
  Vec x = RandomVector(n, x_seed, scale), y(n);
  const Vec r = RandomVector(n, r_seed);
  auto f = [&] {
    forward(y.data(), x.data(), n);
    return Dot(r, y);
  };
  Vec dx(n);
  backward(dx.data(), r.data(), x.data(), n);
  ExpectGradientsClose(dx, NumericGradient(x, f), "dx");
}

TEST(Linear, BackwardMatchesFiniteDifferences) {
  const int N = 5, C = 4, OC = 3;
  Vec x = RandomVector(N * C, 1), w = RandomVector(OC * C, 2), b = RandomVector(OC, 3);
  const Vec r = RandomVector(N * OC, 4);
  Vec y(N * OC);
  auto f = [&] {
    LinearForward(y.data(), x.data(), w.data(), b.data(), N, C, OC);
    return Dot(r, y);
  };
  Vec dx(N * C), dw(OC * C), db(OC);
  LinearBackward(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), N, C, OC);
  ExpectGradientsClose(dx, NumericGradient(x, f), "dx");
  ExpectGradientsClose(dw, NumericGradient(w, f), "dw");
  ExpectGradientsClose(db, NumericGradient(b, f), "db");
}

TEST(Linear, BackwardAccumulatesIntoExistingGradients) {
  const int N = 2, C = 3, OC = 2;
  const Vec x = RandomVector(N * C, 1), w = RandomVector(OC * C, 2), r = RandomVector(N * OC, 3);
  Vec once(OC * C), twice(OC * C), db(OC);
  LinearBackward<double>(nullptr, once.data(), db.data(), r.data(), x.data(), w.data(), N, C, OC);
  LinearBackward<double>(nullptr, twice.data(), nullptr, r.data(), x.data(), w.data(), N, C, OC);
  LinearBackward<double>(nullptr, twice.data(), nullptr, r.data(), x.data(), w.data(), N, C, OC);
  for (int i = 0; i < OC * C; ++i) EXPECT_DOUBLE_EQ(twice[i], 2 * once[i]);
}

TEST(LayerNorm, BackwardMatchesFiniteDifferences) {
  const int N = 4, C = 6;
  Vec x = RandomVector(N * C, 5, 2.0), g = RandomVector(C, 6), b = RandomVector(C, 7);
  const Vec r = RandomVector(N * C, 8);
  Vec y(N * C), mean(N), rstd(N);
  auto f = [&] {
    LayerNormForward(y.data(), mean.data(), rstd.data(), x.data(), g.data(), b.data(), N, C);
    return Dot(r, y);
  };
  f();
  Vec dx(N * C), dg(C), db(C);
  LayerNormBackward(dx.data(), dg.data(), db.data(), r.data(), x.data(), g.data(), mean.data(),
                    rstd.data(), N, C);
  ExpectGradientsClose(dx, NumericGradient(x, f), "dx");
  ExpectGradientsClose(dg, NumericGradient(g, f), "dgamma");
  ExpectGradientsClose(db, NumericGradient(b, f), "dbeta");
}

TEST(LayerNorm, OutputHasZeroMeanUnitVarianceBeforeAffine) {
  const int C = 8;
  const Vec x = RandomVector(C, 9, 3.0), g(C, 1.0), b(C, 0.0);
  Vec y(C), mean(1), rstd(1);
  LayerNormForward(y.data(), mean.data(), rstd.data(), x.data(), g.data(), b.data(), 1, C);
  double m = 0, v = 0;
  for (double e : y) m += e / C;
  for (double e : y) v += (e - m) * (e - m) / C;
  EXPECT_NEAR(m, 0, 1e-12);
  EXPECT_NEAR(v, 1 - kLayerNormEps * rstd[0] * rstd[0], 1e-12);  // var / (var + eps)
}

TEST(Gelu, BackwardMatchesFiniteDifferencesAndKnownValues) {
  ExpectPointwiseGradient(GeluForward<double>, GeluBackward<double>, 10, 11, 3.0);
  const double in[] = {1.0, -1.0};
  double out[2];
  GeluForward(out, in, 2);
  EXPECT_NEAR(out[0], 0.8413447460685429, 1e-15);  // x * Phi(x) at 1 (torch.nn.GELU)
  EXPECT_NEAR(out[1], -0.15865525393145707, 1e-15);
}

TEST(Swish, BackwardMatchesFiniteDifferencesAndKnownValues) {
  ExpectPointwiseGradient(SwishForward<double>, SwishBackward<double>, 14, 15, 4.0);
  // torch.nn.SiLU at 1 and -1; far out it is x and 0, with no overflow to NaN.
  const double in[] = {1.0, -1.0, 800.0, -800.0};
  double out[4], grad[4] = {0, 0, 0, 0};
  const double ones[4] = {1, 1, 1, 1};
  SwishForward(out, in, 4);
  EXPECT_NEAR(out[0], 0.7310585786300049, 1e-15);
  EXPECT_NEAR(out[1], -0.2689414213699951, 1e-15);
  EXPECT_EQ(out[2], 800.0);
  EXPECT_EQ(out[3], 0.0);
  SwishBackward(grad, ones, in, 4);
  EXPECT_NEAR(grad[0], 0.9276705118714867, 1e-15);  // s + x s (1 - s) at 1
  EXPECT_EQ(grad[2], 1.0);
  EXPECT_EQ(grad[3], 0.0);
}

TEST(Activation, NamesParseAndDispatch) {
  Activation a = Activation::kGelu;
  ASSERT_TRUE(ParseActivation("swish", &a));
  EXPECT_EQ(a, Activation::kSwish);
  ASSERT_TRUE(ParseActivation("silu", &a));
  EXPECT_EQ(a, Activation::kSwish);
  ASSERT_TRUE(ParseActivation("gelu", &a));
  EXPECT_EQ(a, Activation::kGelu);
  EXPECT_FALSE(ParseActivation("relu", &a));
  EXPECT_STREQ(ActivationName(Activation::kSwish), "swish");
  const double in[] = {0.5};
  double gelu[1], swish[1], via[1];
  GeluForward(gelu, in, 1);
  SwishForward(swish, in, 1);
  ActivationForward(Activation::kSwish, via, in, 1);
  EXPECT_EQ(via[0], swish[0]);
  ActivationForward(Activation::kGelu, via, in, 1);
  EXPECT_EQ(via[0], gelu[0]);
}

TEST(Relu, BackwardMatchesFiniteDifferences) {
  ExpectPointwiseGradient(ReluForward<double>, ReluBackward<double>, 12, 13);
}

TEST(Softmax, BackwardMatchesFiniteDifferences) {
  const int N = 3, V = 5;
  Vec x = RandomVector(N * V, 14, 3.0), y(N * V);
  const Vec r = RandomVector(N * V, 15);
  auto f = [&] {
    SoftmaxForward(y.data(), x.data(), N, V);
    return Dot(r, y);
  };
  f();
  Vec dx(N * V);
  SoftmaxBackward(dx.data(), r.data(), y.data(), N, V);
  ExpectGradientsClose(dx, NumericGradient(x, f), "dx");
}

TEST(LogSoftmax, BackwardMatchesFiniteDifferencesAndSurvivesLargeLogits) {
  const int N = 3, V = 5;
  Vec x = RandomVector(N * V, 16, 3.0), y(N * V);
  const Vec r = RandomVector(N * V, 17);
  auto f = [&] {
    LogSoftmaxForward(y.data(), x.data(), N, V);
    return Dot(r, y);
  };
  f();
  Vec dx(N * V);
  LogSoftmaxBackward(dx.data(), r.data(), y.data(), N, V);
  ExpectGradientsClose(dx, NumericGradient(x, f), "dx");
  const float big[] = {1000.f, 0.f};
  float out[2];
  LogSoftmaxForward(out, big, 1, 2);
  EXPECT_EQ(out[0], 0.f);
  EXPECT_EQ(out[1], -1000.f);
}

TEST(Residual, BackwardAddsIntoBothInputs) {
  const Vec a = {1, 2}, b = {3, 4}, dout = {0.5, -1};
  Vec y(2), da = {1, 1}, db(2);
  ResidualForward(y.data(), a.data(), b.data(), 2);
  EXPECT_EQ(y, (Vec{4, 6}));
  ResidualBackward(da.data(), db.data(), dout.data(), 2);
  EXPECT_EQ(da, (Vec{1.5, 0}));
  EXPECT_EQ(db, dout);
}

TEST(Dropout, MaskIsAPureFunctionOfTheKeyWithTheRightRate) {
  const DropoutKey key{7, 3, 2};
  const size_t n = 100000;
  const Vec x(n, 1.0);
  Vec y(n), y2(n);
  DropoutForward(y.data(), x.data(), n, 0.25f, key);
  DropoutForward(y2.data(), x.data(), n, 0.25f, key);
  EXPECT_EQ(y, y2);
  size_t kept = 0;
  for (double v : y) {
    EXPECT_TRUE(v == 0.0 || v == 1.0 / 0.75);
    kept += v != 0.0;
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.75, 0.01);
  for (DropoutKey other : {DropoutKey{8, 3, 2}, DropoutKey{7, 4, 2}, DropoutKey{7, 3, 3}}) {
    DropoutForward(y2.data(), x.data(), n, 0.25f, other);
    EXPECT_NE(y, y2);
  }
  EXPECT_EQ(DropoutUniform(key, 0), DropoutUniform(DropoutKey{7, 3, 2}, 0));
}

TEST(Dropout, BackwardMatchesFiniteDifferencesAndZeroRateIsIdentity) {
  const int n = 50;
  const DropoutKey key{1, 2, 3};
  Vec x = RandomVector(n, 18), y(n);
  const Vec r = RandomVector(n, 19);
  auto f = [&] {
    DropoutForward(y.data(), x.data(), n, 0.5f, key);
    return Dot(r, y);
  };
  Vec dx(n);
  DropoutBackward(dx.data(), r.data(), n, 0.5f, key);
  ExpectGradientsClose(dx, NumericGradient(x, f), "dx");
  DropoutForward(y.data(), x.data(), n, 0.0f, key);
  EXPECT_EQ(y, x);
}

TEST(Attention, BackwardMatchesFiniteDifferencesWithPadding) {
  const int B = 2, T = 5, C = 6, H = 2;
  const int32_t lengths[] = {5, 3};
  Vec qkv = RandomVector(B * T * 3 * C, 20), y(B * T * C), att(B * H * T * T);
  const Vec r = RandomVector(B * T * C, 21);
  auto f = [&] {
    AttentionForward(y.data(), att.data(), qkv.data(), lengths, B, T, C, H);
    return Dot(r, y);
  };
  f();
  Vec dqkv(qkv.size());
  AttentionBackward(dqkv.data(), r.data(), qkv.data(), att.data(), lengths, B, T, C, H);
  ExpectGradientsClose(dqkv, NumericGradient(qkv, f), "dqkv");
}

TEST(Attention, PaddedKeysGetZeroProbabilityAndDoNotChangeValidRows) {
  const int B = 1, T = 4, C = 4, H = 2;
  const int32_t lengths[] = {2};
  Vec qkv = RandomVector(T * 3 * C, 22), y(T * C), att(H * T * T);
  AttentionForward(y.data(), att.data(), qkv.data(), lengths, B, T, C, H);
  for (int h = 0; h < H; ++h)
    for (int t = 0; t < T; ++t) {
      double sum = 0;
      for (int j = 0; j < T; ++j) {
        const double p = att[(h * T + t) * T + j];
        if (j >= 2) {
          EXPECT_EQ(p, 0.0);
        }
        sum += p;
      }
      EXPECT_NEAR(sum, 1.0, 1e-12);
    }
  // Changing anything in the padded frames leaves valid rows unchanged.
  Vec y2(T * C);
  for (int i = 2 * 3 * C; i < T * 3 * C; ++i) qkv[i] += 10;
  AttentionForward(y2.data(), att.data(), qkv.data(), lengths, B, T, C, H);
  for (int i = 0; i < 2 * C; ++i) EXPECT_EQ(y[i], y2[i]);
}

TEST(Attention, FloatAgreesWithDouble) {
  const int B = 1, T = 6, C = 8, H = 2;
  const int32_t lengths[] = {5};
  const Vec qkv = RandomVector(T * 3 * C, 23);
  const std::vector<float> qkvf(qkv.begin(), qkv.end());
  Vec y(T * C), att(H * T * T);
  std::vector<float> yf(T * C), attf(H * T * T);
  AttentionForward(y.data(), att.data(), qkv.data(), lengths, B, T, C, H);
  AttentionForward(yf.data(), attf.data(), qkvf.data(), lengths, B, T, C, H);
  for (int i = 0; i < T * C; ++i) EXPECT_NEAR(yf[i], y[i], 1e-6);
}

TEST(Conv2d, BackwardMatchesFiniteDifferences) {
  const int B = 2, Cin = 2, H = 7, W = 6, Cout = 3;
  const int Ho = Conv2dOutSize(H), Wo = Conv2dOutSize(W);
  ASSERT_EQ(Ho, 3);
  ASSERT_EQ(Wo, 2);
  Vec x = RandomVector(B * Cin * H * W, 24), w = RandomVector(Cout * Cin * 9, 25),
      b = RandomVector(Cout, 26), y(B * Cout * Ho * Wo);
  const Vec r = RandomVector(y.size(), 27);
  auto f = [&] {
    Conv2dForward(y.data(), x.data(), w.data(), b.data(), B, Cin, H, W, Cout);
    return Dot(r, y);
  };
  Vec dx(x.size()), dw(w.size()), db(b.size());
  Conv2dBackward(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), B, Cin, H, W, Cout);
  ExpectGradientsClose(dx, NumericGradient(x, f), "dx");
  ExpectGradientsClose(dw, NumericGradient(w, f), "dw");
  ExpectGradientsClose(db, NumericGradient(b, f), "db");
}

TEST(Conv2d, ComputesTheDirectSumAtOnePoint) {
  const int H = 5, W = 5;
  const Vec x = RandomVector(H * W, 28), w = RandomVector(9, 29), b = {0.5};
  Vec y(4);
  Conv2dForward(y.data(), x.data(), w.data(), b.data(), 1, 1, H, W, 1);
  double expect = 0.5;  // output (1, 1) reads rows 2..4, columns 2..4
  for (int kh = 0; kh < 3; ++kh)
    for (int kw = 0; kw < 3; ++kw) expect += w[kh * 3 + kw] * x[(2 + kh) * W + 2 + kw];
  EXPECT_NEAR(y[3], expect, 1e-15);
}

TEST(Conv2d, SubsampledLengthMatchesEspnetFormula) {
  for (int n = 7; n < 200; ++n) EXPECT_EQ(SubsampledLength(n), ((n - 1) / 2 - 1) / 2) << n;
  for (int n = 0; n < 7; ++n) EXPECT_EQ(SubsampledLength(n), 0) << n;
  // output frame t reads input frames [4t, 4t + 6]
  for (int n = 7; n < 100; ++n) EXPECT_LT(4 * (SubsampledLength(n) - 1) + 6, n);
  for (int n = 7; n < 100; ++n) EXPECT_GE(4 * SubsampledLength(n) + 6, n);
}

}  // namespace
}  // namespace sluice::reference
