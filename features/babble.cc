#include "features/babble.h"

#include <algorithm>
#include <cmath>

#include "base/random.h"
#include "features/additive_noise.h"

namespace sluice::features {

BabbleDraw DrawBabble(const BabbleOptions& opt, uint64_t key, const std::vector<uint64_t>& pool_ids,
                      uint64_t record_id) {
  Rng rng(key);
  BabbleDraw d;
  const bool on = rng.Uniform() < opt.probability;
  d.snr_db = opt.min_snr_db + (opt.max_snr_db - opt.min_snr_db) * rng.Uniform();
  const int lo = std::clamp(opt.min_speakers, 1, kMaxBabbleSpeakers);
  const int hi = std::clamp(opt.max_speakers, lo, kMaxBabbleSpeakers);
  const auto eligible = static_cast<uint64_t>(std::count_if(
      pool_ids.begin(), pool_ids.end(), [&](uint64_t id) { return id != record_id; }));
  const auto want = static_cast<uint64_t>(rng.UniformInt(lo, hi));
  d.speakers = static_cast<int>(std::min(want, eligible));
  d.apply = on && d.speakers > 0;
  // Rejection keeps every eligible clip equally likely; it ends because speakers <= eligible.
  for (int k = 0; k < d.speakers;) {
    const auto j =
        static_cast<uint64_t>(rng.UniformInt(0, static_cast<int64_t>(pool_ids.size()) - 1));
    if (pool_ids[j] == record_id) continue;
    if (std::find(d.clip.begin(), d.clip.begin() + k, j) != d.clip.begin() + k) continue;
    d.clip[k] = j;
    d.offset[k] = rng.Uniform();
    ++k;
  }
  return d;
}

bool AddBabble(float* x, size_t n, const std::vector<std::vector<float>>& pool, const BabbleDraw& d,
               std::vector<float>* scratch) {
  if (n == 0 || d.speakers == 0) return false;
  scratch->assign(n, 0.0f);
  float* sum = scratch->data();
  for (int k = 0; k < d.speakers; ++k) {
    const std::vector<float>& clip = pool[d.clip[k]];
    const size_t m = clip.size();
    if (m == 0) continue;
    const size_t start = NoiseStart(n, m, d.offset[k]);
    double energy = 0.0;
    for (size_t i = 0, j = start; i < n; ++i) {
      energy += static_cast<double>(clip[j]) * clip[j];
      if (++j == m) j = 0;
    }
    if (!(energy > 0.0)) continue;  // a silent clip adds nothing
    const auto g = static_cast<float>(std::sqrt(static_cast<double>(n) / energy));
    for (size_t i = 0, j = start; i < n; ++i) {
      sum[i] += g * clip[j];
      if (++j == m) j = 0;
    }
  }
  // The sum is one noise signal of the utterance's length: the SNR is set as for noise.
  return AddNoise(x, n, sum, n, d.snr_db, 0.0);
}

}  // namespace sluice::features
