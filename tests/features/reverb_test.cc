// Reverberation against a double-precision direct convolution written here, on responses shaped
// like measured ones: a propagation delay, a direct path, early reflections and an exponentially
// decaying diffuse tail.
#include "features/reverb.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "assert_ok.h"
#include "base/random.h"

namespace sluice::features {
namespace {

std::vector<float> Noise(size_t n, uint64_t key, float scale) {
  Rng rng(key);
  std::vector<float> x(n);
  for (auto& v : x) v = scale * static_cast<float>(2 * rng.Uniform() - 1);
  return x;
}

// A room response of `length` samples at 16 kHz: silence for `delay` samples, the direct path,
// 12 reflections in the next 50 ms, and a tail with the given RT60 (60 dB of decay).
std::vector<float> RoomResponse(size_t length, size_t delay, double rt60_s, uint64_t key) {
  Rng rng(key);
  std::vector<float> h(length, 0.0f);
  h[delay] = 0.8f;
  for (int i = 0; i < 12; ++i) {
    const size_t at = delay + 20 + static_cast<size_t>(rng.UniformInt(0, 800));
    if (at < length) h[at] += static_cast<float>((rng.Uniform() - 0.5) * 0.6);
  }
  const double per_sample = std::log(1e-3) / (rt60_s * 16000);
  for (size_t i = delay + 1; i < length; ++i) {
    h[i] += static_cast<float>(0.1 * (2 * rng.Uniform() - 1) *
                               std::exp(per_sample * static_cast<double>(i - delay)));
  }
  return h;
}

// y[t] = sum_k h[k] x[t + direct - k] in double.
std::vector<double> DirectConvolution(const std::vector<float>& x, const std::vector<float>& h,
                                      size_t direct) {
  std::vector<double> y(x.size(), 0.0);
  for (size_t t = 0; t < x.size(); ++t) {
    double acc = 0;
    const int64_t s = static_cast<int64_t>(t + direct);
    for (size_t k = 0; k < h.size(); ++k) {
      const int64_t i = s - static_cast<int64_t>(k);
      if (i < 0) break;
      if (i < static_cast<int64_t>(x.size())) acc += static_cast<double>(h[k]) * x[i];
    }
    y[t] = acc;
  }
  return y;
}

double RelativeError(const std::vector<float>& y, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    num += (y[i] - ref[i]) * (y[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

TEST(ReverbTest, EqualsDirectConvolutionFromTheDirectPath) {
  ReverbWorkspace ws;
  struct Case {
    size_t n, length, delay;
    double rt60;
  };
  // Utterances shorter than one block, not a multiple of it, and many blocks long.
  for (const Case c : {Case{1000, 4000, 37, 0.3}, Case{24011, 4000, 160, 0.4},
                       Case{40000, 8000, 0, 0.6}, Case{5000, 1, 0, 0.1}}) {
    const auto x = Noise(c.n, c.n, 0.5f);
    const auto h = RoomResponse(c.length, c.delay, c.rt60, c.length + c.delay);
    ImpulseResponse ir;
    ASSERT_OK(PrepareImpulseResponse(h.data(), h.size(), &ir));
    ASSERT_EQ(ir.direct, c.delay);
    auto y = x;
    Reverberate(y.data(), y.size(), ir, /*keep_level=*/false, &ws);
    const auto ref = DirectConvolution(x, h, ir.direct);
    EXPECT_LT(RelativeError(y, ref), 1e-5) << "n " << c.n << " length " << c.length;
  }
}

TEST(ReverbTest, KeepLevelScalesToTheInputEnergy) {
  ReverbWorkspace ws;
  const auto x = Noise(20000, 5, 0.5f);
  const auto h = RoomResponse(6000, 50, 0.5, 9);
  ImpulseResponse ir;
  ASSERT_OK(PrepareImpulseResponse(h.data(), h.size(), &ir));
  auto y = x, z = x;
  Reverberate(y.data(), y.size(), ir, /*keep_level=*/true, &ws);
  Reverberate(z.data(), z.size(), ir, /*keep_level=*/false, &ws);
  double ex = 0, ey = 0, ez = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    ex += static_cast<double>(x[i]) * x[i];
    ey += static_cast<double>(y[i]) * y[i];
    ez += static_cast<double>(z[i]) * z[i];
  }
  EXPECT_NEAR(ey / ex, 1.0, 1e-5);
  EXPECT_GT(std::fabs(ez / ex - 1.0), 0.1);  // the unscaled result's level did change
}

TEST(ReverbTest, AUnitImpulseAfterADelayLeavesTheClipInPlace) {
  ReverbWorkspace ws;
  const auto x = Noise(3000, 3, 0.5f);
  std::vector<float> h(700, 0.0f);
  h[300] = 1.0f;
  ImpulseResponse ir;
  ASSERT_OK(PrepareImpulseResponse(h.data(), h.size(), &ir));
  auto y = x;
  Reverberate(y.data(), y.size(), ir, false, &ws);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(y[i], x[i], 1e-6) << i;
}

TEST(ReverbTest, ASilentResponseIsRefusedWithItsLength) {
  std::vector<float> h(64, 0.0f);
  ImpulseResponse ir;
  const Status s = PrepareImpulseResponse(h.data(), h.size(), &ir);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("64 samples"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace sluice::features
