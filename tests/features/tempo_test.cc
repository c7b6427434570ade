// Tempo perturbation (features/tempo.h): its output does not depend on the float scale of its
// input, and its bytes are SoundTouch 2.3.2's flushed output.
#include "features/tempo.h"

#include <SoundTouch.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "assert_ok.h"
#include "base/random.h"

namespace sluice::features {
namespace {

constexpr int kRate = 16000;

// int16 samples of noise with a slow envelope (speech-like enough for WSOLA's seek to matter).
std::vector<int16_t> Pcm(uint64_t seed, size_t n) {
  Rng rng(seed);
  std::vector<int16_t> pcm(n);
  for (size_t i = 0; i < n; ++i) {
    const double envelope = 0.5 + 0.5 * std::sin(static_cast<double>(i) * 6.283 / 3000);
    pcm[i] = static_cast<int16_t>((2 * rng.Uniform() - 1) * 20000 * envelope);
  }
  return pcm;
}

std::vector<float> Scaled(const std::vector<int16_t>& pcm, float scale) {
  std::vector<float> x(pcm.size());
  for (size_t i = 0; i < pcm.size(); ++i) x[i] = static_cast<float>(pcm[i]) * scale;
  return x;
}

// The loader feeds tempo int16-scaled samples (fbank, raw) or [-1, 1] ones (spectrogram, and
// sluice.augment.tempo): the same clip must get the same splice points at either scale. Both
// scales are powers of two, so the outputs are equal up to the scale exactly, not within rounding.
TEST(TempoTest, OutputIsTheSameWhateverTheInputsFullScale) {
  TempoStretcher stretcher;
  for (double factor : {0.8, 0.9, 1.1, 1.25}) {
    for (uint64_t seed : {1, 2, 3}) {
      const std::vector<int16_t> pcm = Pcm(seed, 24000);
      const std::vector<float> unit = Scaled(pcm, 1.0f / 32768);
      const std::vector<float> int16 = Scaled(pcm, 1.0f);
      std::vector<float> a, b;
      ASSERT_OK(stretcher.Process(unit.data(), unit.size(), kRate, factor, 1.0f, &a));
      ASSERT_OK(stretcher.Process(int16.data(), int16.size(), kRate, factor, 32768.0f, &b));
      ASSERT_EQ(a.size(), b.size());
      size_t differ = 0;
      for (size_t i = 0; i < a.size(); ++i) differ += a[i] * 32768 != b[i];
      EXPECT_EQ(differ, 0u) << "factor " << factor << ", seed " << seed << ": " << differ << " of "
                            << a.size() << " samples differ";
    }
  }
}

uint64_t Fnv1a(uint64_t h, const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

// The bytes of SoundTouch 2.3.2's own flush() (recorded before tempo.cc fed the flush's zeros
// itself): lengths around a 128-sample zero piece and the 16384-sample input chunk, factors both
// sides of 1. Another SoundTouch build (another version, or aarch64's plain C instead of x86-64's
// SSE) gives other bytes; docs/augment.md says so.
TEST(TempoTest, FlushedBytesAreSoundTouch232sOnX86) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the recorded bytes are x86-64's (SoundTouch's SSE path)";
#endif
  if (SOUNDTOUCH_VERSION_ID != 20302) GTEST_SKIP() << "the recorded bytes are SoundTouch 2.3.2's";
  TempoStretcher stretcher;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t n : {1, 127, 128, 129, 777, 16000, 16384, 16385, 40001}) {
    for (double factor : {0.5, 0.8, 0.9, 1.1, 1.25, 2.0}) {
      const std::vector<float> x = Scaled(Pcm(n, n), 1.0f);
      std::vector<float> y;
      ASSERT_OK(stretcher.Process(x.data(), x.size(), kRate, factor, 32768.0f, &y));
      ASSERT_EQ(y.size(), TempoLength(n, factor));
      h = Fnv1a(h, y.data(), y.size() * sizeof(float));
    }
  }
  EXPECT_EQ(h, 0xcdee32927bc3dce4ull) << std::hex << "0x" << h;
}

}  // namespace
}  // namespace sluice::features
