#include "features/band_limit.h"

#include <algorithm>

#include "base/random.h"

namespace sluice::features {

BandLimitDraw DrawBandLimit(const BandLimitOptions& opt, uint64_t key) {
  Rng rng(key);
  BandLimitDraw d;
  d.apply = rng.Uniform() < opt.probability && !opt.rates.empty();
  if (!opt.rates.empty()) {
    d.rate = opt.rates[static_cast<size_t>(
        rng.UniformInt(0, static_cast<int64_t>(opt.rates.size()) - 1))];
  }
  return d;
}

Status BandLimit(float* x, size_t n, int sample_rate, double rate, Resampler* resampler,
                 std::vector<float>* down, std::vector<float>* up) {
  if (n == 0 || rate >= sample_rate) return Status::OK();
  if (Status s = resampler->Process(x, n, sample_rate, rate, down); !s.ok()) return s;
  if (Status s = resampler->Process(down->data(), down->size(), rate, sample_rate, up); !s.ok())
    return s;
  const size_t got = std::min(n, up->size());
  std::copy_n(up->data(), got, x);
  std::fill(x + got, x + n, got > 0 ? x[got - 1] : 0.0f);
  return Status::OK();
}

}  // namespace sluice::features
