// Generated speech-like clips for the benchmarks that need audio without files (features,
// augment): deterministic in (clip, rate), so runs compare.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "base/random.h"

namespace sluice::bench {

// Speech-like noise in [-1, 1]: a voiced source (harmonics of a gliding pitch) under a syllable
// envelope, plus noise, with silences. Deterministic in (clip, rate).
inline std::vector<float> SpeechLikeClip(uint64_t clip, int rate, size_t n) {
  std::vector<float> v(n);
  Rng rng(StreamKey(20240601, 0, clip));
  const double f0 = 90 + 120 * rng.Uniform();
  const double syllable_hz = 3 + 2 * rng.Uniform();
  double phase = 0;
  for (size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i) / rate;
    phase += 2 * M_PI * f0 * (1 + 0.1 * std::sin(2 * M_PI * 0.5 * t)) / rate;
    const double env = std::max(0.0, std::sin(2 * M_PI * syllable_hz * t));
    double voiced = 0;
    for (int h = 1; h <= 8; ++h) voiced += std::sin(h * phase) / h;
    const double noise = rng.Uniform() - 0.5;
    v[i] = static_cast<float>(0.25 * env * voiced + 0.02 * noise);
  }
  return v;
}

}  // namespace sluice::bench
