// Framing arithmetic, windows and the inline maths the feature loops rely on.
#include <cfloat>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "features/fast_math.h"
#include "features/half.h"
#include "features/frames.h"
#include "features/mel.h"
#include "features/window.h"
#include "assert_ok.h"

namespace sluice::features {
namespace {

TEST(FastMathTest, LogIsWithinAFewUlpOverTheWholeRange) {
  double worst_ulp = 0;
  // Floats from 1e-7 (below the FLT_EPSILON floor) to 1e30, 0.01% apart.
  for (float x = 1e-7f; x < 1e30f; x = std::nextafter(x * 1.0001f, INFINITY)) {
    const double exact = std::log(static_cast<double>(x));
    const float got = internal::LogPositive(x);
    const double ulp = std::fabs(std::nextafter(static_cast<float>(exact), INFINITY) -
                                 static_cast<float>(exact));
    worst_ulp = std::max(worst_ulp, std::fabs(got - exact) / ulp);
  }
  std::printf("LogPositive: worst %.2f ulp\n", worst_ulp);
  EXPECT_LE(worst_ulp, 1.0);
  EXPECT_EQ(internal::LogPositive(1.0f), 0.0f);
  EXPECT_NEAR(internal::LogPositive(FLT_EPSILON), std::log(FLT_EPSILON), 2e-6);
}

TEST(FastMathTest, Log1pKeepsRelativeAccuracyForSmallArguments) {
  double worst = 0;
  for (float x = 1e-12f; x < 1e6f; x *= 1.01f) {
    const double exact = std::log1p(static_cast<double>(x));
    worst = std::max(worst, std::fabs(internal::Log1pNonNegative(x) - exact) / exact);
  }
  std::printf("Log1pNonNegative: worst relative error %.2e\n", worst);
  EXPECT_LE(worst, 1e-6);
  EXPECT_EQ(internal::Log1pNonNegative(0.0f), 0.0f);
}

TEST(FramesTest, MirrorIndexFollowsBothConventions) {
  // Kaldi: x[-1] = x[0]; torch reflect: x[-1] = x[1].
  EXPECT_EQ(MirrorIndex(-1, 10, true), 0);
  EXPECT_EQ(MirrorIndex(-3, 10, true), 2);
  EXPECT_EQ(MirrorIndex(10, 10, true), 9);
  EXPECT_EQ(MirrorIndex(12, 10, true), 7);
  EXPECT_EQ(MirrorIndex(-1, 10, false), 1);
  EXPECT_EQ(MirrorIndex(-3, 10, false), 3);
  EXPECT_EQ(MirrorIndex(10, 10, false), 8);
  EXPECT_EQ(MirrorIndex(5, 10, false), 5);
  // Folds repeatedly for short signals, always in range.
  for (int64_t i = -50; i < 50; ++i) {
    for (int64_t n = 1; n < 6; ++n) {
      ASSERT_GE(MirrorIndex(i, n, true), 0);
      ASSERT_LT(MirrorIndex(i, n, true), n);
      ASSERT_GE(MirrorIndex(i, n, false), 0);
      ASSERT_LT(MirrorIndex(i, n, false), n);
    }
  }
}

TEST(FramesTest, FirstSamplesOfEachConvention) {
  EXPECT_EQ(FirstSample(3, 400, 160, FrameConvention::kSnipEdges), 480);
  EXPECT_EQ(FirstSample(0, 400, 160, FrameConvention::kKaldiCenter), -120);
  EXPECT_EQ(FirstSample(0, 160, 80, FrameConvention::kCenter), -80);
}

TEST(WindowTest, KaldiWindowsHaveTheirShapes) {
  const auto hann = KaldiWindow(WindowType::kHanning, 5);
  EXPECT_FLOAT_EQ(hann[0], 0.0f);
  EXPECT_FLOAT_EQ(hann[2], 1.0f);
  EXPECT_FLOAT_EQ(hann[4], 0.0f);
  const auto povey = KaldiWindow(WindowType::kPovey, 5);
  EXPECT_FLOAT_EQ(povey[1], std::pow(0.5f, 0.85f));
  const auto hamming = PeriodicWindow(WindowType::kHamming, 4);
  EXPECT_FLOAT_EQ(hamming[0], 0.08f);
  EXPECT_FLOAT_EQ(hamming[2], 1.0f);
  WindowType t;
  EXPECT_TRUE(ParseWindowType("hann", &t));
  EXPECT_EQ(t, WindowType::kHanning);
  EXPECT_FALSE(ParseWindowType("kaiser", &t));
}

TEST(MelTest, TrianglesPartitionTheBand) {
  MelBanks banks;
  ASSERT_OK(MakeMelBanks({80, 20, 0}, 16000, 512, &banks));
  ASSERT_EQ(banks.num_bins, 80);
  // Neighbouring triangles overlap so that, inside the band, the weights of a bin sum to ~1.
  std::vector<double> total(256, 0.0);
  for (int m = 0; m < 80; ++m) {
    for (int i = 0; i < banks.length[m]; ++i)
      total[banks.start[m] + i] += banks.weights[banks.offset[m] + i];
  }
  for (int k = 10; k < 240; ++k) EXPECT_NEAR(total[k], 1.0, 1e-5) << k;
  EXPECT_TRUE(MakeMelBanks({80, 20, 9000}, 16000, 512, &banks).IsInvalidArgument());
  EXPECT_TRUE(MakeMelBanks({80, 5000, 4000}, 16000, 512, &banks).IsInvalidArgument());
}

}  // namespace
}  // namespace sluice::features

namespace sluice::features {
namespace {

TEST(HalfTest, BFloat16RoundsToNearestEvenAndKeepsNaN) {
  const float in[] = {1.0f, -3.0f, 1.0f + 1.0f / 256, 1.0f + 3.0f / 256, std::nanf("")};
  uint16_t out[5];
  FloatToBFloat16(in, 5, out);
  EXPECT_EQ(out[0], 0x3f80);
  EXPECT_EQ(out[1], 0xc040);
  EXPECT_EQ(out[2], 0x3f80);  // tie goes to the even mantissa
  EXPECT_EQ(out[3], 0x3f82);
  EXPECT_EQ(out[4] & 0x7f80, 0x7f80);
  EXPECT_NE(out[4] & 0x007f, 0);
}

TEST(HalfTest, EveryHalfRoundTripsAndFloatsRoundToNearestEven) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto in = static_cast<uint16_t>(h);
    float f;
    HalfToFloat(&in, 1, &f);
    uint16_t back;
    FloatToHalf(&f, 1, &back);
    if (std::isnan(f)) {
      ASSERT_TRUE((back & 0x7c00) == 0x7c00 && (back & 0x3ff) != 0) << h;
    } else {
      ASSERT_EQ(back, in) << h;
    }
  }
  const float cases[] = {1.0f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 65504.0f, 65520.0f,
                         1e-8f, 2.9802322e-8f, -0.0f, 3e-5f};
  const uint16_t expected[] = {0x3c00, 0x3c00, 0x3c02, 0x7bff, 0x7c00, 0x0000, 0x0000, 0x8000,
                               0x01f7};
  for (size_t i = 0; i < std::size(cases); ++i) {
    uint16_t h;
    FloatToHalf(&cases[i], 1, &h);
    EXPECT_EQ(h, expected[i]) << cases[i];
  }
}

}  // namespace
}  // namespace sluice::features
