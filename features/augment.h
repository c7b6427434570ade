// Training-time augmentation for the loader: SpecAugment masks and speed perturbation. Every
// random choice is a pure function of (seed, epoch, record id), so an epoch replays bit-identically
// on any thread count and after a resume (DESIGN.md, "Determinism").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/fields.h"
#include "base/status.h"
#include "features/resample.h"

namespace sluice::features {

// SpecAugment (Park et al. 2019): frequency and time masks. Defaults are the paper's LD policy.
struct SpecAugmentOptions {
  int num_freq_masks = 2;      // frequency masks per utterance
  int max_freq_width = 27;     // bins; each mask's width is uniform in [0, max_freq_width]
  int num_time_masks = 2;      // time masks per utterance
  int max_time_width = 100;    // frames; each mask's width is uniform in [0, max_time_width]
  float max_time_ratio = 1.0f; // a time mask covers at most this fraction of the frames (p)
  float fill_value = 0.0f;     // value written into masked cells (0 = the mean after CMVN)
};

// SpecAugmentOptions' table (base/fields.h).
template <OptionsOf<SpecAugmentOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"num_freq_masks", "--freq-masks", "SpecAugment: frequency masks per utterance",
              Affects::kWhat, 0, 64},
    o.num_freq_masks);
  v(FieldInfo{"max_freq_width", "--max-freq-width",
              "SpecAugment: a frequency mask's width is uniform in [0, this] bins", Affects::kWhat,
              0, 100000},
    o.max_freq_width);
  v(FieldInfo{"num_time_masks", "--time-masks", "SpecAugment: time masks per utterance",
              Affects::kWhat, 0, 64},
    o.num_time_masks);
  v(FieldInfo{"max_time_width", "--max-time-width",
              "SpecAugment: a time mask's width is uniform in [0, this] frames", Affects::kWhat, 0,
              1000000},
    o.max_time_width);
  v(FieldInfo{"max_time_ratio", "--max-time-ratio",
              "SpecAugment: a time mask covers at most this fraction of the frames", Affects::kWhat,
              0, 1},
    o.max_time_ratio);
  v(FieldInfo{"fill_value", "--mask-value",
              "SpecAugment: value of masked cells (0 = the mean after --cmvn)"},
    o.fill_value);
}

struct SpecAugmentMask {
  bool time = false;  // true: frames [begin, begin + width); false: bins [begin, begin + width)
  int64_t begin = 0;
  int64_t width = 0;
};

// The masks for one utterance of `frames` x `dim`, appended to *masks (cleared first).
void DrawSpecAugmentMasks(const SpecAugmentOptions& opt, uint64_t seed, uint64_t epoch,
                          uint64_t record_id, int64_t frames, int dim,
                          std::vector<SpecAugmentMask>* masks);

// Applies those masks in place to feats [frames, dim] (row-major). Allocation-free.
void SpecAugment(const SpecAugmentOptions& opt, uint64_t seed, uint64_t epoch, uint64_t record_id,
                 float* feats, int64_t frames, int dim);

// Speed perturbation as Kaldi/ESPnet recipes do it (sox "speed"): tempo and pitch change
// together by resampling.
struct SpeedPerturbOptions {
  std::vector<double> factors = {0.9, 1.0, 1.1};  // speed factors, drawn with equal probability
};

// SpeedPerturbOptions' table (base/fields.h).
template <OptionsOf<SpeedPerturbOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"factors", "--speed-factors",
              "speed perturbation: factors drawn with equal probability", Affects::kWhat, 0.01,
              100},
    o.factors);
}

// The factor for one record in one epoch.
double PickSpeedFactor(const SpeedPerturbOptions& opt, uint64_t seed, uint64_t epoch,
                       uint64_t record_id);

// Plays `in` (at sample_rate Hz) `factor` times faster: resamples it as if it had been recorded
// at sample_rate * factor. Output has round(n / factor) samples at the same rate; factor 1 copies.
// InvalidArgument for factor <= 0.
Status SpeedPerturb(const float* in, size_t n, int sample_rate, double factor,
                    Resampler* resampler, std::vector<float>* out);

}  // namespace sluice::features
