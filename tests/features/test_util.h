// Helpers shared by the features tests: reference arrays from make_reference.py and the
// committed speech clips.
#pragma once

#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "features/audio.h"
#include "assert_ok.h"

namespace sluice::features::testing {

inline std::string DataPath(const std::string& name) {
  return std::string(SLUICE_FEATURES_TESTDATA) + "/" + name;
}

// A raw little-endian float32 array written by make_reference.py; empty if missing.
inline std::vector<float> LoadReference(const std::string& name) {
  std::ifstream f(DataPath(name), std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), {});
  std::vector<float> v(bytes.size() / sizeof(float));
  std::copy(bytes.begin(), bytes.begin() + v.size() * sizeof(float),
            reinterpret_cast<char*>(v.data()));
  return v;
}

// The committed clip as floats in [-1, 1].
inline std::vector<float> LoadClip(const std::string& name, int expected_rate) {
  DecodedAudio audio;
  Status s = DecodeFile(DataPath(name), {}, &audio);
  EXPECT_OK(s);
  EXPECT_EQ(audio.sample_rate, expected_rate);
  return audio.samples;
}

inline std::vector<float> Scaled(std::vector<float> v, float scale) {
  for (float& x : v) x *= scale;
  return v;
}

struct ErrorStats {
  double max_abs = 0;
  double mean_abs = 0;
  double fraction_within = 0;  // of |a - b| <= tolerance
};

inline ErrorStats Compare(const std::vector<float>& a, const std::vector<float>& b,
                          double tolerance) {
  ErrorStats s;
  size_t within = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    s.max_abs = std::max(s.max_abs, d);
    s.mean_abs += d;
    within += d <= tolerance ? 1 : 0;
  }
  if (!a.empty()) {
    s.mean_abs /= static_cast<double>(a.size());
    s.fraction_within = static_cast<double>(within) / static_cast<double>(a.size());
  }
  return s;
}

// Deterministic speech-like test noise (int16 scale): a few drifting harmonics plus noise.
inline std::vector<float> SyntheticSpeech(size_t n, int rate, uint32_t seed, float scale = 8000) {
  std::vector<float> v(n);
  uint32_t state = seed * 2654435761u + 1;
  double phase = 0;
  for (size_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    const double noise = (static_cast<double>(state >> 8) / (1 << 24)) - 0.5;
    const double t = static_cast<double>(i) / rate;
    phase += 2 * M_PI * (120 + 30 * std::sin(2 * M_PI * 0.7 * t)) / rate;
    const double envelope = 0.5 + 0.5 * std::sin(2 * M_PI * 3 * t);
    v[i] = static_cast<float>(
        scale * (envelope * (0.6 * std::sin(phase) + 0.3 * std::sin(3 * phase)) + 0.1 * noise));
  }
  return v;
}

}  // namespace sluice::features::testing
