// The chain's length-changing stage: speed perturbation (augment.h's SpeedPerturb, soxr) and
// tempo perturbation (tempo.h, SoundTouch) in one place. Both change a clip's length, so they run
// before the rest of the chain (waveform_augment.h) and the loader plans each epoch with the
// length they give, which ChangedLength computes from the draw alone, exactly: the plan's
// frames are the output's.
//
// Speed and tempo are drawn independently, each with its own key: a record may get neither,
// one, or both (speed first, then tempo: the resampled clip's tempo changed). Both together make
// a clip factor_s * factor_t times faster with its pitch moved by factor_s alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "features/resample.h"
#include "features/tempo.h"
#include "features/waveform_augment_options.h"

namespace sluice::features {

// One record's draw: 1 for a transform it does not get.
struct LengthChange {
  double speed = 1.0;
  double tempo = 1.0;
  bool changes() const { return speed != 1.0 || tempo != 1.0; }
};

// DrawSpeedFactor and DrawTempoFactor (waveform_augment.h) of one record in one epoch.
LengthChange DrawLengthChange(const WaveformAugmentOptions& opt, uint64_t seed, uint64_t epoch,
                              uint64_t record_id);

// The samples ChangeLength gives for a clip of n samples at sample_rate Hz: speed's
// round(n / speed) (soxr's length), then tempo's round(m / tempo).
size_t ChangedLength(size_t n, int sample_rate, const LengthChange& c);

// Per-thread scratch, reused from record to record (soxr engines, the SoundTouch processor).
struct LengthWorkspace {
  Resampler resampler;
  TempoStretcher stretcher;
  std::vector<float> resampled;  // after speed
  std::vector<float> stretched;  // after tempo
};

// Applies c to `in` (n samples at sample_rate Hz, a full-scale sample being `full_scale`: 1 or
// 32768, as in AugmentWaveform): *out points to `in` when c changes nothing, else into ws;
// *out_n is ChangedLength(n, sample_rate, c). The output is full_scale * g(in / full_scale)
// (tempo's splice points do not depend on the scale). Errors of soxr and SoundTouch's argument
// checks.
Status ChangeLength(const float* in, size_t n, int sample_rate, float full_scale,
                    const LengthChange& c, LengthWorkspace* ws, const float** out, size_t* out_n);

}  // namespace sluice::features
