// Bandwidth limit (waveform_augment_options.h, BandLimitOptions): soxr down to a lower rate and
// back up, so that what lies above half that rate is gone while the clip keeps its rate and
// length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "features/resample.h"
#include "features/waveform_augment_options.h"

namespace sluice::features {

struct BandLimitDraw {
  bool apply = false;
  double rate = 0.0;  // Hz, the intermediate rate
};
// Empty `rates` draws apply = false.
BandLimitDraw DrawBandLimit(const BandLimitOptions& opt, uint64_t key);

// x (n samples at sample_rate Hz) in place through `rate` Hz and back: the result has n samples
// (the round trip's last sample is dropped or repeated when rounding makes it n +- 1). A rate at
// or above sample_rate leaves x unchanged. down and up are scratch, reused between calls.
Status BandLimit(float* x, size_t n, int sample_rate, double rate, Resampler* resampler,
                 std::vector<float>* down, std::vector<float>* up);

}  // namespace sluice::features
