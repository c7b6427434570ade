// SpecAugment and speed perturbation: deterministic in (seed, epoch, record id).
#include "features/augment.h"

#include <cmath>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "assert_ok.h"
#include "features/waveform_augment.h"

namespace sluice::features {
namespace {

std::vector<float> Ones(int64_t frames, int dim) {
  return std::vector<float>(static_cast<size_t>(frames) * dim, 1.0f);
}

TEST(SpecAugmentTest, SameKeySameMasksOtherKeysOtherMasks) {
  SpecAugmentOptions o;
  auto a = Ones(500, 80), b = Ones(500, 80), c = Ones(500, 80), d = Ones(500, 80);
  SpecAugment(o, 1, 0, 7, a.data(), 500, 80);
  SpecAugment(o, 1, 0, 7, b.data(), 500, 80);
  SpecAugment(o, 1, 1, 7, c.data(), 500, 80);  // next epoch
  SpecAugment(o, 1, 0, 8, d.data(), 500, 80);  // next record
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
}

TEST(SpecAugmentTest, MasksMatchTheDrawnMasksAndStayInBounds) {
  SpecAugmentOptions o;
  o.fill_value = -5;
  for (uint64_t record = 0; record < 50; ++record) {
    const int64_t frames = 40 + static_cast<int64_t>(record) * 13;
    auto feats = Ones(frames, 80);
    SpecAugment(o, 3, 2, record, feats.data(), frames, 80);
    std::vector<SpecAugmentMask> masks;
    DrawSpecAugmentMasks(o, 3, 2, record, frames, 80, &masks);
    ASSERT_EQ(masks.size(), 4u);
    auto expected = Ones(frames, 80);
    for (const auto& m : masks) {
      ASSERT_GE(m.begin, 0);
      ASSERT_LE(m.begin + m.width, m.time ? frames : 80);
      ASSERT_LE(m.width, m.time ? o.max_time_width : o.max_freq_width);
      for (int64_t f = 0; f < frames; ++f) {
        for (int j = 0; j < 80; ++j) {
          const int64_t pos = m.time ? f : j;
          if (pos >= m.begin && pos < m.begin + m.width) expected[f * 80 + j] = -5;
        }
      }
    }
    ASSERT_EQ(feats, expected) << record;
  }
}

TEST(SpecAugmentTest, TimeMasksRespectTheRatio) {
  SpecAugmentOptions o;
  o.num_freq_masks = 0;
  o.max_time_ratio = 0.05f;
  std::vector<SpecAugmentMask> masks;
  for (uint64_t r = 0; r < 100; ++r) {
    DrawSpecAugmentMasks(o, 1, 1, r, 100, 80, &masks);
    for (const auto& m : masks) ASSERT_LE(m.width, 5);
  }
  // Tiny inputs do not break it.
  auto one = Ones(1, 3);
  SpecAugment(SpecAugmentOptions{}, 1, 1, 1, one.data(), 1, 3);
  SpecAugment(SpecAugmentOptions{}, 1, 1, 1, nullptr, 0, 3);
}

TEST(SpeedPerturbTest, FactorIsDeterministicAndCoversTheChoices) {
  SpeedPerturbOptions o;
  std::set<double> seen;
  for (uint64_t r = 0; r < 200; ++r) {
    const double f = PickSpeedFactor(o, 5, 3, r);
    EXPECT_EQ(f, PickSpeedFactor(o, 5, 3, r));
    seen.insert(f);
  }
  EXPECT_EQ(seen, (std::set<double>{0.9, 1.0, 1.1}));
  EXPECT_EQ(PickSpeedFactor(SpeedPerturbOptions{{}}, 1, 1, 1), 1.0);
}

// The chain's speed transform at probability 1 is the older speed perturbation, record for
// record; below 1 it keeps a share of the records at speed 1 and draws the rest the same way.
TEST(SpeedPerturbTest, ChainSpeedAtProbabilityOneIsTheOlderPick) {
  SpeedPerturbOptions older;
  older.factors = {0.8, 0.95, 1.2};
  WaveformAugmentOptions chain;
  chain.speed.probability = 1;
  chain.speed.factors = older.factors;
  WaveformAugmentOptions half = chain;
  half.speed.probability = 0.5;
  int kept = 0, same = 0;
  for (uint64_t record = 0; record < 2000; ++record) {
    const double f = PickSpeedFactor(older, 7, 3, record);
    ASSERT_EQ(DrawSpeedFactor(chain, 7, 3, record), f) << record;
    const double h = DrawSpeedFactor(half, 7, 3, record);
    kept += h == 1.0;
    same += h == f;
  }
  EXPECT_GT(kept, 800);  // about 1000
  EXPECT_LT(kept, 1200);
  EXPECT_EQ(same, 2000 - kept) << "an applied factor is the older pick";
  chain.speed.probability = 0;
  EXPECT_EQ(DrawSpeedFactor(chain, 7, 3, 11), 1.0);
}

TEST(SpeedPerturbTest, FasterIsShorterAndRaisesThePitch) {
  const int rate = 16000;
  std::vector<float> tone(16000);
  for (size_t i = 0; i < tone.size(); ++i) tone[i] = 0.5f * std::sin(2 * M_PI * 500 * i / rate);
  Resampler resampler;
  std::vector<float> fast, slow, same, again;
  ASSERT_OK(SpeedPerturb(tone.data(), tone.size(), rate, 1.1, &resampler, &fast));
  ASSERT_OK(SpeedPerturb(tone.data(), tone.size(), rate, 0.9, &resampler, &slow));
  ASSERT_OK(SpeedPerturb(tone.data(), tone.size(), rate, 1.0, &resampler, &same));
  ASSERT_OK(SpeedPerturb(tone.data(), tone.size(), rate, 1.1, &resampler, &again));
  EXPECT_EQ(fast.size(), 14545u);  // round(16000 / 1.1)
  EXPECT_EQ(slow.size(), 17778u);
  EXPECT_EQ(same, tone);
  EXPECT_EQ(fast, again);  // bit-identical replay, engine reused
  // Zero crossings per second: 1000 at 500 Hz, 1100 after speeding up by 1.1.
  int crossings = 0;
  for (size_t i = 1000; i < 12000; ++i) crossings += (fast[i - 1] < 0) != (fast[i] < 0);
  EXPECT_NEAR(crossings / (11000.0 / rate), 1100, 15);
  EXPECT_TRUE(
      SpeedPerturb(tone.data(), tone.size(), rate, 0, &resampler, &fast).IsInvalidArgument());
}

}  // namespace
}  // namespace sluice::features
