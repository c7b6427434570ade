#include "features/length_change.h"

#include "features/augment.h"
#include "features/waveform_augment.h"

namespace sluice::features {

LengthChange DrawLengthChange(const WaveformAugmentOptions& opt, uint64_t seed, uint64_t epoch,
                              uint64_t record_id) {
  LengthChange c;
  c.speed = DrawSpeedFactor(opt, seed, epoch, record_id);
  c.tempo = DrawTempoFactor(opt, seed, epoch, record_id);
  return c;
}

size_t ChangedLength(size_t n, int sample_rate, const LengthChange& c) {
  // SpeedPerturb resamples from rate * factor to rate.
  const size_t m = c.speed == 1.0 ? n : ResampledLength(n, sample_rate * c.speed, sample_rate);
  return TempoLength(m, c.tempo);
}

Status ChangeLength(const float* in, size_t n, int sample_rate, float full_scale,
                    const LengthChange& c, LengthWorkspace* ws, const float** out, size_t* out_n) {
  *out = in;
  *out_n = n;
  if (c.speed != 1.0) {
    SLUICE_RETURN_IF_ERROR(
        SpeedPerturb(*out, *out_n, sample_rate, c.speed, &ws->resampler, &ws->resampled));
    *out = ws->resampled.data();
    *out_n = ws->resampled.size();
  }
  if (c.tempo != 1.0) {
    SLUICE_RETURN_IF_ERROR(
        ws->stretcher.Process(*out, *out_n, sample_rate, c.tempo, full_scale, &ws->stretched));
    *out = ws->stretched.data();
    *out_n = ws->stretched.size();
  }
  return Status::OK();
}

}  // namespace sluice::features
