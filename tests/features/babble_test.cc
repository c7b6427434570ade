// Babble: the measured SNR is the drawn one, the picks are distinct other utterances, never the
// record itself, and the same key draws the same babble.
#include "features/babble.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "base/random.h"
#include "features/waveform_augment.h"

namespace sluice::features {
namespace {

std::vector<float> Tone(size_t n, double hz, float scale) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i)
    x[i] = scale * static_cast<float>(std::sin(2 * M_PI * hz * i / 16000));
  return x;
}

double MeasuredSnr(const std::vector<float>& clean, const std::vector<float>& mixed) {
  double s = 0, e = 0;
  for (size_t i = 0; i < clean.size(); ++i) {
    s += static_cast<double>(clean[i]) * clean[i];
    const double d = static_cast<double>(mixed[i]) - clean[i];
    e += d * d;
  }
  return 10 * std::log10(s / e);
}

// A pool of utterances of unlike lengths and levels; pool_ids[i] = 100 + i.
struct Pool {
  std::vector<std::vector<float>> clips;
  std::vector<uint64_t> ids;
  Pool(int n) {
    for (int i = 0; i < n; ++i) {
      clips.push_back(Tone(2000 + 3000 * i, 150 + 40 * i, 0.01f + 0.1f * i));
      ids.push_back(100 + i);
    }
  }
};

TEST(BabbleTest, MeasuredSnrIsTheDrawnSnr) {
  BabbleOptions o;
  o.probability = 1;
  o.min_snr_db = -5;
  o.max_snr_db = 30;
  o.min_speakers = 1;
  o.max_speakers = 7;
  const Pool pool(9);
  std::vector<float> scratch;
  int applied = 0;
  for (uint64_t record = 0; record < 60; ++record) {
    const std::vector<float> clean = Tone(4000 + 997 * record, 440, 3000.0f);
    std::vector<float> x = clean;
    const BabbleDraw d = DrawBabble(o, Mix64(record + 1), pool.ids, record);
    ASSERT_TRUE(d.apply);
    ASSERT_GE(d.speakers, 1);
    ASSERT_LE(d.speakers, 7);
    ASSERT_TRUE(AddBabble(x.data(), x.size(), pool.clips, d, &scratch));
    EXPECT_NEAR(MeasuredSnr(clean, x), d.snr_db, 0.1) << record;
    ++applied;
  }
  EXPECT_EQ(applied, 60);
}

TEST(BabbleTest, PicksAreDistinctAndNeverTheRecordItself) {
  BabbleOptions o;
  o.probability = 1;
  o.min_speakers = 3;
  o.max_speakers = 7;
  const Pool pool(8);  // ids 100 .. 107
  std::set<uint64_t> seen;
  for (uint64_t record = 100; record < 108; ++record) {
    for (uint64_t key = 0; key < 300; ++key) {
      const BabbleDraw d = DrawBabble(o, Mix64(key * 31 + record), pool.ids, record);
      ASSERT_TRUE(d.apply);
      ASSERT_LE(d.speakers, 7);
      std::set<uint64_t> picks;
      for (int k = 0; k < d.speakers; ++k) {
        ASSERT_NE(pool.ids[d.clip[k]], record) << "key " << key;
        picks.insert(d.clip[k]);
        seen.insert(d.clip[k]);
      }
      ASSERT_EQ(picks.size(), static_cast<size_t>(d.speakers)) << "a clip picked twice";
    }
  }
  EXPECT_EQ(seen.size(), 8u) << "every clip is picked for some record";
  // A pool of the record alone has nothing to mix; one other clip gives one speaker.
  EXPECT_FALSE(DrawBabble(o, 5, {42}, 42).apply);
  const BabbleDraw one = DrawBabble(o, 5, {42, 43}, 42);
  ASSERT_TRUE(one.apply);
  EXPECT_EQ(one.speakers, 1);
  EXPECT_EQ(one.clip[0], 1u);
}

// Through the chain: the key is (seed, epoch, record), and the pool's ids exclude the record.
TEST(BabbleTest, ChainReplaysTheSameBabbleForTheSameKey) {
  WaveformAugmentOptions o;
  o.babble.probability = 1;
  WaveformSources s;
  const Pool pool(6);
  s.babble = pool.clips;
  s.babble_ids = pool.ids;
  WaveformWorkspace ws1, ws2;
  const std::vector<float> clean = Tone(8000, 300, 5000.0f);
  auto run = [&](uint64_t seed, uint64_t epoch, uint64_t record, WaveformWorkspace* ws) {
    std::vector<float> x = clean;
    EXPECT_TRUE(
        AugmentWaveform(o, s, seed, epoch, record, x.data(), x.size(), 16000, 32768.0f, ws).ok());
    return x;
  };
  const std::vector<float> a = run(1, 2, 103, &ws1);
  EXPECT_EQ(a, run(1, 2, 103, &ws2));
  EXPECT_NE(a, clean);
  EXPECT_NE(a, run(1, 3, 103, &ws1)) << "the next epoch draws anew";
  EXPECT_NE(a, run(1, 2, 104, &ws1));
  s.babble_ids.pop_back();
  std::vector<float> x = clean;
  EXPECT_FALSE(AugmentWaveform(o, s, 1, 2, 3, x.data(), x.size(), 16000, 32768.0f, &ws1).ok())
      << "a pool whose ids do not match its clips is refused";
}

}  // namespace
}  // namespace sluice::features
