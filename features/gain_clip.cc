#include "features/gain_clip.h"

#include <algorithm>
#include <cmath>

#include "base/random.h"

namespace sluice::features {

GainDraw DrawGain(const GainOptions& opt, uint64_t key) {
  Rng rng(key);
  GainDraw d;
  d.apply = rng.Uniform() < opt.probability;
  d.db = opt.min_db + (opt.max_db - opt.min_db) * rng.Uniform();
  return d;
}

ClippingDraw DrawClipping(const ClippingOptions& opt, uint64_t key) {
  Rng rng(key);
  ClippingDraw d;
  d.apply = rng.Uniform() < opt.probability;
  d.level = opt.min_level + (opt.max_level - opt.min_level) * rng.Uniform();
  return d;
}

void ApplyGain(float* x, size_t n, double db) {
  const auto g = static_cast<float>(std::pow(10.0, db / 20.0));
  for (size_t i = 0; i < n; ++i) x[i] *= g;
}

void ApplyClipping(float* x, size_t n, double level) {
  float peak = 0.0f;
  for (size_t i = 0; i < n; ++i) peak = std::max(peak, std::fabs(x[i]));
  const auto t = static_cast<float>(level * peak);
  for (size_t i = 0; i < n; ++i) x[i] = std::clamp(x[i], -t, t);
}

}  // namespace sluice::features
