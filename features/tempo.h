// Tempo perturbation: the clip played `factor` times faster at the same pitch, by WSOLA
// (waveform-similarity overlap-add) through libsoundtouch. Speed perturbation (augment.h) moves
// tempo and pitch together; this moves tempo alone. SoundTouch stays behind a pimpl: no public
// header includes it.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "base/status.h"

namespace sluice::features {

// The samples a tempo change by `factor` yields from n: round(n / factor), the same rule as
// speed perturbation's ResampledLength, so a plan counts both alike. factor 1 keeps n.
size_t TempoLength(size_t n, double factor);

// One SoundTouch processor, reset before each clip and kept between clips so that a loader thread
// does not rebuild its buffers per record. Its settings are fixed (sequence 40 ms, seek window
// 15 ms, overlap 8 ms, the full seek rather than the quick one): the output is a function of the
// clip, the rate and the factor alone, whatever clip the processor handled before. Not
// thread-safe: one per thread.
class TempoStretcher {
 public:
  TempoStretcher();
  ~TempoStretcher();
  TempoStretcher(const TempoStretcher&) = delete;
  TempoStretcher& operator=(const TempoStretcher&) = delete;

  // `in` (n samples at sample_rate Hz, a full-scale sample being `full_scale`: 1 for [-1, 1],
  // 32768 for int16-scaled floats) played `factor` times faster into *out, resized to
  // TempoLength(n, factor) (capacity kept): SoundTouch's flushed output, cut or padded with
  // zeros at the end to that length. SoundTouch 2.3.2's flush aims at that length and met it in
  // every clip tried, but its API does not promise it, and the plan counts on it. factor 1
  // copies. The output is full_scale * f(in / full_scale): SoundTouch's seek is not
  // scale-invariant, so the samples go in at int16 scale whatever `full_scale` is (exactly
  // when full_scale is a power of two, as 1 and 32768 are). InvalidArgument for a rate <= 0,
  // a factor outside [0.1, 10] (SoundTouch's range) or a full scale that is not above 0.
  Status Process(const float* in, size_t n, int sample_rate, double factor, float full_scale,
                 std::vector<float>* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::features
