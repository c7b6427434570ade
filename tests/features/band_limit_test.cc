// Bandwidth limit: the energy above half the drawn rate is gone and the energy below it kept,
// both measured with an FFT of the result.
#include "features/band_limit.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "assert_ok.h"
#include "base/random.h"
#include "features/fft.h"

namespace sluice::features {
namespace {

constexpr int kRate = 16000;
constexpr int kFft = 16384;  // about 1 Hz per bin

std::vector<float> Noise(size_t n, uint64_t key) {
  Rng rng(key);
  std::vector<float> x(n);
  for (auto& v : x) v = static_cast<float>(rng.Uniform() - 0.5);
  return x;
}

// Energy per bin of the Hann-windowed first kFft samples.
std::vector<double> PowerSpectrum(const std::vector<float>& x) {
  AlignedBuffer in(kFft), out(kFft + 2);
  for (int i = 0; i < kFft; ++i) {
    in.data()[i] = x[i] * static_cast<float>(0.5 - 0.5 * std::cos(2 * M_PI * i / kFft));
  }
  RealFft::Get(kFft)->Forward(in.data(), out.data());
  std::vector<double> p(kFft / 2 + 1);
  for (size_t k = 0; k < p.size(); ++k) {
    p[k] = std::pow(out.data()[2 * k], 2.0) + std::pow(out.data()[2 * k + 1], 2.0);
  }
  return p;
}

double BandEnergy(const std::vector<double>& p, double lo_hz, double hi_hz) {
  double e = 0;
  for (size_t k = 0; k < p.size(); ++k) {
    const double hz = static_cast<double>(k) * kRate / kFft;
    if (hz >= lo_hz && hz < hi_hz) e += p[k];
  }
  return e;
}

TEST(BandLimitTest, RemovesWhatIsAboveHalfTheRateAndKeepsWhatIsBelow) {
  Resampler resampler;
  std::vector<float> down, up;
  for (double rate : {8000.0, 11025.0, 12000.0}) {
    const auto x = Noise(20000, static_cast<uint64_t>(rate));
    auto y = x;
    ASSERT_OK(BandLimit(y.data(), y.size(), kRate, rate, &resampler, &down, &up));
    ASSERT_EQ(y.size(), x.size());
    const auto px = PowerSpectrum(x), py = PowerSpectrum(y);
    const double cut = rate / 2;
    // Above the cut-off (a little past it: soxr's transition band ends at the new Nyquist).
    const double above =
        BandEnergy(py, cut * 1.02, kRate / 2) / BandEnergy(px, cut * 1.02, kRate / 2);
    EXPECT_LT(10 * std::log10(above), -50) << rate << " Hz";
    // Below: soxr's HQ passband is flat to 0.1 dB up to 90% of the new Nyquist.
    const double below = BandEnergy(py, 50, cut * 0.85) / BandEnergy(px, 50, cut * 0.85);
    EXPECT_NEAR(10 * std::log10(below), 0.0, 0.1) << rate << " Hz";
  }
}

TEST(BandLimitTest, ARateAtOrAboveTheClipsLeavesItUnchanged) {
  Resampler resampler;
  std::vector<float> down, up;
  const auto x = Noise(5000, 1);
  auto y = x;
  ASSERT_OK(BandLimit(y.data(), y.size(), kRate, kRate, &resampler, &down, &up));
  EXPECT_EQ(y, x);
}

TEST(BandLimitTest, DrawsPickOneOfTheRates) {
  BandLimitOptions o;
  o.probability = 1;
  for (uint64_t key = 0; key < 300; ++key) {
    const BandLimitDraw d = DrawBandLimit(o, key);
    ASSERT_TRUE(d.apply);
    ASSERT_TRUE(d.rate == 8000 || d.rate == 11025 || d.rate == 12000) << d.rate;
  }
  o.rates.clear();
  EXPECT_FALSE(DrawBandLimit(o, 1).apply);
}

}  // namespace
}  // namespace sluice::features
