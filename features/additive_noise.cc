#include "features/additive_noise.h"

#include <algorithm>
#include <cmath>

#include "base/random.h"

namespace sluice::features {

NoiseDraw DrawNoise(const NoiseOptions& opt, uint64_t key, uint64_t num_clips) {
  Rng rng(key);
  NoiseDraw d;
  d.apply = rng.Uniform() < opt.probability && num_clips > 0;
  d.snr_db = opt.min_snr_db + (opt.max_snr_db - opt.min_snr_db) * rng.Uniform();
  d.clip = num_clips > 0 ? static_cast<uint64_t>(rng.UniformInt(0, num_clips - 1)) : 0;
  d.offset = rng.Uniform();
  return d;
}

size_t NoiseStart(size_t n, size_t m, double offset) {
  if (m == 0) return 0;
  const size_t span = m >= n ? m - n + 1 : m;
  return std::min(span - 1, static_cast<size_t>(offset * static_cast<double>(span)));
}

bool AddNoise(float* x, size_t n, const float* noise, size_t m, double snr_db, double offset) {
  if (n == 0 || m == 0) return false;
  const size_t start = NoiseStart(n, m, offset);
  double signal = 0.0, energy = 0.0;
  for (size_t i = 0, j = start; i < n; ++i) {
    signal += static_cast<double>(x[i]) * x[i];
    energy += static_cast<double>(noise[j]) * noise[j];
    if (++j == m) j = 0;
  }
  if (!(signal > 0.0) || !(energy > 0.0)) return false;
  const auto g = static_cast<float>(std::sqrt(signal / (energy * std::pow(10.0, snr_db / 10.0))));
  for (size_t i = 0, j = start; i < n; ++i) {
    x[i] += g * noise[j];
    if (++j == m) j = 0;
  }
  return true;
}

}  // namespace sluice::features
