// Conversions between int16 PCM and float samples.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::features {

// in[i] * 32768 rounded to nearest (ties to even), clamped to [-32768, 32767]; NaN becomes 0.
// The exact inverse of libsndfile's int16 -> normalised float (s / 32768) for int16 sources.
void FloatToPcm16(const float* in, size_t n, int16_t* out);

// Samples FloatToPcm16 clamps: beyond int16's range (|x| > 32767/32768, or below -1), as float
// sources above full scale hold. *peak (when given) receives the largest |x|, NaN ignored.
size_t CountBeyondFullScale(const float* in, size_t n, float* peak = nullptr);

// out[i] = in[i] * scale. scale = 1.0f / 32768 gives libsndfile's normalised floats in [-1, 1];
// scale = 1 gives Kaldi's int16-range input for the filterbank.
void Pcm16ToFloat(const int16_t* in, size_t n, float* out, float scale);

}  // namespace sluice::features
