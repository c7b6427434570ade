// Reverberation by FFT convolution (FFTW, fft.h) with a room impulse response: uniform
// overlap-add in blocks of B samples (B = the power of two >= the response's length) with FFTs of
// 2B, so that each response's spectrum is computed once (PrepareImpulseResponse) and serves
// utterances of any length. The output keeps the input's length and is read from the full
// convolution starting at the response's direct path (its largest |sample|), so that speech does
// not move in time and transcripts' time stamps stay right.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "features/fft.h"
#include "features/waveform_augment_options.h"

namespace sluice::features {

// One impulse response, ready to convolve with. Immutable once prepared: shared by all threads.
struct ImpulseResponse {
  size_t length = 0;       // samples of the response
  size_t block = 0;        // B: input samples per block
  size_t direct = 0;       // index of the direct path (first largest |h|)
  AlignedBuffer spectrum;  // FFT of h zero-padded to 2B, (re, im) pairs, scaled by 1 / (2B)
};

// InvalidArgument for an empty response or one with no non-zero sample.
Status PrepareImpulseResponse(const float* h, size_t length, ImpulseResponse* out);

// Scratch for Reverberate, reused across calls (grows to the largest size seen). One per thread.
struct ReverbWorkspace {
  AlignedBuffer block;  // 2B floats in, then the product's inverse out
  AlignedBuffer spectrum;
  std::vector<float> sum;  // the overlap-added convolution
};

struct ReverbDraw {
  bool apply = false;
  uint64_t clip = 0;  // index of the response, in [0, num_clips)
};
ReverbDraw DrawReverb(const ReverbOptions& opt, uint64_t key, uint64_t num_clips);

// x (n samples) in place becomes y[t] = sum_k h[k] x[t + direct - k], t in [0, n): the full
// convolution from the direct path on, cut to n. keep_level scales y to x's energy (an all-zero
// y stays zero).
void Reverberate(float* x, size_t n, const ImpulseResponse& h, bool keep_level,
                 ReverbWorkspace* ws);

}  // namespace sluice::features
