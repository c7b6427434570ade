// The options of the loader's augmentation (augment.h): SpecAugment masks and speed perturbation,
// with their options tables. Apart from the kernels so that the loader's options
// (loader/options.h), and the SDK that installs them, reach the options alone, not the resampler.
#pragma once

#include <vector>

#include "../base/fields.h"

namespace sluice::features {

// SpecAugment (Park et al. 2019): frequency and time masks. Defaults are the paper's LD policy.
struct SpecAugmentOptions {
  int num_freq_masks = 2;       // frequency masks per utterance
  int max_freq_width = 27;      // bins; each mask's width is uniform in [0, max_freq_width]
  int num_time_masks = 2;       // time masks per utterance
  int max_time_width = 100;     // frames; each mask's width is uniform in [0, max_time_width]
  float max_time_ratio = 1.0f;  // a time mask covers at most this fraction of the frames (p)
  float fill_value = 0.0f;      // value written into masked cells (0 = the mean after CMVN)
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

// Speed perturbation as Kaldi/ESPnet recipes do it (sox "speed"): tempo and pitch change
// together by resampling. LoaderOptions' older spelling of the waveform chain's speed transform
// (waveform_augment_options.h, SpeedOptions), still read: its table has no flag, since
// --speed-factors sets the chain's.
struct SpeedPerturbOptions {
  std::vector<double> factors = {0.9, 1.0, 1.1};  // speed factors, drawn with equal probability
};

// SpeedPerturbOptions' table (base/fields.h).
template <OptionsOf<SpeedPerturbOptions> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"factors", nullptr, "speed perturbation: factors drawn with equal probability",
              Affects::kWhat, 0.01, 100},
    o.factors);
}

}  // namespace sluice::features
