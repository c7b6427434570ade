// Additive noise: the measured SNR is the drawn one, the excerpt is cut or looped as documented.
#include "features/additive_noise.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "base/random.h"

namespace sluice::features {
namespace {

std::vector<float> Noise(size_t n, uint64_t key, float scale) {
  Rng rng(key);
  std::vector<float> x(n);
  for (auto& v : x) v = scale * static_cast<float>(2 * rng.Uniform() - 1);
  return x;
}

// 10 log10(E_clean / E_(mixed - clean)), in double.
double MeasuredSnr(const std::vector<float>& clean, const std::vector<float>& mixed) {
  double s = 0, e = 0;
  for (size_t i = 0; i < clean.size(); ++i) {
    s += static_cast<double>(clean[i]) * clean[i];
    const double d = static_cast<double>(mixed[i]) - clean[i];
    e += d * d;
  }
  return 10 * std::log10(s / e);
}

TEST(AdditiveNoiseTest, MeasuredSnrIsTheDrawnSnr) {
  NoiseOptions o;
  o.probability = 1;
  o.min_snr_db = -5;
  o.max_snr_db = 30;
  // Noise clips shorter and longer than the utterance, at levels unlike the speech's.
  const std::vector<std::vector<float>> clips = {Noise(3000, 11, 0.01f), Noise(50000, 12, 0.9f),
                                                 Noise(16000, 13, 0.2f)};
  for (uint64_t record = 0; record < 60; ++record) {
    const size_t n = 4000 + record * 517;
    const auto clean = Noise(n, 100 + record, 0.3f);
    const NoiseDraw d = DrawNoise(o, StreamKey(7, 1, record), clips.size());
    ASSERT_TRUE(d.apply);
    ASSERT_LT(d.clip, clips.size());
    auto mixed = clean;
    const auto& noise = clips[d.clip];
    ASSERT_TRUE(AddNoise(mixed.data(), n, noise.data(), noise.size(), d.snr_db, d.offset));
    EXPECT_NEAR(MeasuredSnr(clean, mixed), d.snr_db, 0.1) << "record " << record;
  }
}

TEST(AdditiveNoiseTest, ShortNoiseIsLoopedFromTheDrawnPhase) {
  const std::vector<float> noise = {1, 2, 3, 4};
  std::vector<float> x(10, 0.0f);
  x[0] = 1.0f;  // energy 1
  // offset 0.5 of 4 phases: starts at noise[2]; SNR 0 dB: noise energy scaled to 1.
  ASSERT_TRUE(AddNoise(x.data(), x.size(), noise.data(), noise.size(), 0.0, 0.5));
  const std::vector<float> excerpt = {3, 4, 1, 2, 3, 4, 1, 2, 3, 4};
  double e = 0;
  for (float v : excerpt) e += v * v;
  const auto g = static_cast<float>(std::sqrt(1.0 / e));
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_FLOAT_EQ(x[i], (i == 0 ? 1.0f : 0.0f) + g * excerpt[i]) << i;
  }
}

TEST(AdditiveNoiseTest, LongNoiseIsCutWithinTheClip) {
  EXPECT_EQ(NoiseStart(10, 100, 0.0), 0u);
  EXPECT_EQ(NoiseStart(10, 100, 0.999999), 90u);  // the last start whose excerpt fits
  EXPECT_EQ(NoiseStart(10, 10, 0.7), 0u);
  EXPECT_EQ(NoiseStart(10, 4, 0.999999), 3u);
}

TEST(AdditiveNoiseTest, SilenceOnEitherSideLeavesTheClipUnchanged) {
  std::vector<float> x(100, 0.0f), noise(50, 0.5f);
  EXPECT_FALSE(AddNoise(x.data(), x.size(), noise.data(), noise.size(), 10, 0.3));
  EXPECT_EQ(x, std::vector<float>(100, 0.0f));
  x.assign(100, 0.5f);
  noise.assign(50, 0.0f);
  EXPECT_FALSE(AddNoise(x.data(), x.size(), noise.data(), noise.size(), 10, 0.3));
  EXPECT_EQ(x, std::vector<float>(100, 0.5f));
}

TEST(AdditiveNoiseTest, NoClipsNoNoise) {
  NoiseOptions o;
  o.probability = 1;
  EXPECT_FALSE(DrawNoise(o, 1, 0).apply);
}

}  // namespace
}  // namespace sluice::features
