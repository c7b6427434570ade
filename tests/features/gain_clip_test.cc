// Gain and clipping: exact per-sample results, and draws that are functions of the key.
#include "features/gain_clip.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "base/random.h"

namespace sluice::features {
namespace {

std::vector<float> Noise(size_t n, uint64_t key) {
  Rng rng(key);
  std::vector<float> x(n);
  for (auto& v : x) v = static_cast<float>(2 * rng.Uniform() - 1);
  return x;
}

TEST(GainTest, SixPointZeroTwoDecibelsDoublesEverySampleExactly) {
  const auto x = Noise(1000, 1);
  auto y = x;
  ApplyGain(y.data(), y.size(), 20 * std::log10(2.0));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], 2 * x[i]) << i;
}

TEST(GainTest, EverySampleIsMultipliedByTheSameFloatFactor) {
  const auto x = Noise(1000, 2);
  auto y = x;
  ApplyGain(y.data(), y.size(), -20.0);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], x[i] * 0.1f) << i;
}

TEST(ClippingTest, ClampsAtTheLevelTimesThePeak) {
  std::vector<float> x = {0.1f, -0.5f, 0.8f, -1.0f, 0.25f, 0.0f};
  ApplyClipping(x.data(), x.size(), 0.5);  // peak 1.0: clamps at +-0.5
  EXPECT_EQ(x, (std::vector<float>{0.1f, -0.5f, 0.5f, -0.5f, 0.25f, 0.0f}));
  std::vector<float> zeros(8, 0.0f);
  ApplyClipping(zeros.data(), zeros.size(), 0.5);
  EXPECT_EQ(zeros, std::vector<float>(8, 0.0f));
}

TEST(GainTest, DrawsAreFunctionsOfTheKeyWithinTheRange) {
  GainOptions o;
  o.probability = 0.5;
  o.min_db = -3;
  o.max_db = 9;
  int applied = 0;
  for (uint64_t key = 0; key < 2000; ++key) {
    const GainDraw a = DrawGain(o, key), b = DrawGain(o, key);
    ASSERT_EQ(a.apply, b.apply);
    ASSERT_EQ(a.db, b.db);
    ASSERT_GE(a.db, -3);
    ASSERT_LT(a.db, 9);
    applied += a.apply;
  }
  EXPECT_GT(applied, 900);  // binomial(2000, 0.5): 1000 +- 22 per sigma
  EXPECT_LT(applied, 1100);
  o.probability = 0;
  for (uint64_t key = 0; key < 100; ++key) ASSERT_FALSE(DrawGain(o, key).apply);
}

TEST(ClippingTest, DrawsAreWithinTheRange) {
  ClippingOptions o;
  o.probability = 1;
  for (uint64_t key = 0; key < 1000; ++key) {
    const ClippingDraw d = DrawClipping(o, key);
    ASSERT_TRUE(d.apply);
    ASSERT_GE(d.level, o.min_level);
    ASSERT_LT(d.level, o.max_level);
  }
}

}  // namespace
}  // namespace sluice::features
