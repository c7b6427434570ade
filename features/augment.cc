#include "features/augment.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/random.h"

namespace sluice::features {
namespace {

// Distinct streams per use, so that changing one augmentation's options never shifts another's
// random choices.
constexpr uint64_t kSpecAugmentSalt = 0x5350454341554731ull;  // "SPECAUG1"
constexpr uint64_t kSpeedSalt = 0x5350454544503031ull;        // "SPEEDP01"

// Draws one mask of up to max_width over an axis of `size`, the Park et al. way: width uniform in
// [0, max_width], start uniform over the positions where it fits.
SpecAugmentMask DrawMask(Rng* rng, bool time, int64_t size, int64_t max_width) {
  SpecAugmentMask m;
  m.time = time;
  max_width = std::min(max_width, size);
  if (max_width <= 0) return m;
  m.width = rng->UniformInt(0, max_width);
  m.begin = rng->UniformInt(0, size - m.width);
  return m;
}

}  // namespace

void DrawSpecAugmentMasks(const SpecAugmentOptions& opt, uint64_t seed, uint64_t epoch,
                          uint64_t record_id, int64_t frames, int dim,
                          std::vector<SpecAugmentMask>* masks) {
  masks->clear();
  Rng rng(StreamKey(seed ^ kSpecAugmentSalt, epoch, record_id));
  for (int i = 0; i < opt.num_freq_masks; ++i) {
    masks->push_back(DrawMask(&rng, false, dim, opt.max_freq_width));
  }
  const auto by_ratio = static_cast<int64_t>(std::floor(opt.max_time_ratio * frames));
  const int64_t max_time = std::min<int64_t>(opt.max_time_width, by_ratio);
  for (int i = 0; i < opt.num_time_masks; ++i) {
    masks->push_back(DrawMask(&rng, true, frames, max_time));
  }
}

void SpecAugment(const SpecAugmentOptions& opt, uint64_t seed, uint64_t epoch, uint64_t record_id,
                 float* feats, int64_t frames, int dim) {
  if (frames <= 0 || dim <= 0) return;
  Rng rng(StreamKey(seed ^ kSpecAugmentSalt, epoch, record_id));
  // Same draws, in the same order, as DrawSpecAugmentMasks, without its vector.
  for (int i = 0; i < opt.num_freq_masks; ++i) {
    const SpecAugmentMask m = DrawMask(&rng, false, dim, opt.max_freq_width);
    for (int64_t f = 0; f < frames; ++f) {
      std::fill_n(feats + f * dim + m.begin, m.width, opt.fill_value);
    }
  }
  const auto by_ratio = static_cast<int64_t>(std::floor(opt.max_time_ratio * frames));
  const int64_t max_time = std::min<int64_t>(opt.max_time_width, by_ratio);
  for (int i = 0; i < opt.num_time_masks; ++i) {
    const SpecAugmentMask m = DrawMask(&rng, true, frames, max_time);
    std::fill_n(feats + m.begin * dim, m.width * dim, opt.fill_value);
  }
}

uint64_t SpeedFactorKey(uint64_t seed, uint64_t epoch, uint64_t record_id) {
  return StreamKey(seed ^ kSpeedSalt, epoch, record_id);
}

double PickSpeedFactor(const SpeedPerturbOptions& opt, uint64_t seed, uint64_t epoch,
                       uint64_t record_id) {
  if (opt.factors.empty()) return 1.0;
  Rng rng(SpeedFactorKey(seed, epoch, record_id));
  return opt.factors[static_cast<size_t>(
      rng.UniformInt(0, static_cast<int64_t>(opt.factors.size()) - 1))];
}

Status SpeedPerturb(const float* in, size_t n, int sample_rate, double factor,
                    Resampler* resampler, std::vector<float>* out) {
  if (!(factor > 0) || !std::isfinite(factor)) {
    return Status::InvalidArgument("speed perturbation: factor must be > 0, got " +
                                   std::to_string(factor));
  }
  if (factor == 1.0) {
    out->assign(in, in + n);
    return Status::OK();
  }
  return resampler->Process(in, n, sample_rate * factor, sample_rate, out);
}

}  // namespace sluice::features
