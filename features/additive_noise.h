// Additive noise at a target signal-to-noise ratio (waveform_augment_options.h, NoiseOptions):
// an excerpt of a noise clip, cut to the utterance's length or looped when shorter, scaled so that
// 10 log10(E_signal / E_noise) over the utterance is the drawn SNR, and added. Energies are summed
// in double precision. Allocation-free.
#pragma once

#include <cstddef>
#include <cstdint>

#include "features/waveform_augment_options.h"

namespace sluice::features {

struct NoiseDraw {
  bool apply = false;
  double snr_db = 0.0;
  uint64_t clip = 0;    // index of the noise clip, in [0, num_clips)
  double offset = 0.0;  // where the excerpt starts, as a fraction of the possible starts
};

// num_clips == 0 draws apply = false.
NoiseDraw DrawNoise(const NoiseOptions& opt, uint64_t key, uint64_t num_clips);

// The first noise sample used: floor(offset * (m - n + 1)) when the clip is at least as long as
// the utterance (a cut), floor(offset * m) otherwise (the loop's phase).
size_t NoiseStart(size_t n, size_t m, double offset);

// x[i] += g * noise[(start + i) % m], with g such that the SNR over x is snr_db. Returns false
// and leaves x unchanged when x or the excerpt has no energy (no SNR can be met).
bool AddNoise(float* x, size_t n, const float* noise, size_t m, double snr_db, double offset);

}  // namespace sluice::features
