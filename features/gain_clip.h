// Gain and hard clipping of a waveform, the two level transforms of the augmentation chain
// (waveform_augment_options.h). Pure functions of the samples and the drawn parameters; exact
// (one float multiply or one comparison per sample), allocation-free.
#pragma once

#include <cstddef>
#include <cstdint>

#include "features/waveform_augment_options.h"

namespace sluice::features {

// What one record draws from its key: whether it gets the transform, and its parameter.
struct GainDraw {
  bool apply = false;
  double db = 0.0;
};
struct ClippingDraw {
  bool apply = false;
  double level = 1.0;  // fraction of the clip's peak
};

GainDraw DrawGain(const GainOptions& opt, uint64_t key);
ClippingDraw DrawClipping(const ClippingOptions& opt, uint64_t key);

// x[i] *= float(10^(db / 20)) in place.
void ApplyGain(float* x, size_t n, double db);

// Clamps x in place to +-t, t = float(level * max |x[i]|). An all-zero clip stays zero.
void ApplyClipping(float* x, size_t n, double level);

}  // namespace sluice::features
