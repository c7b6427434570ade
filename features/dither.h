// Dither noise for the filterbank: counter-based, so the noise of a frame is a pure function of
// (key, frame index, sample index) and costs a few integer operations per sample.
#pragma once

#include <cstdint>

namespace sluice::features {

// out[i] = in[i] + scale * g_i, where g_i is approximately standard normal: the centred sum of
// the four bytes of a 32-bit hash of (key + i) (Irwin-Hall with n = 4, unit variance, bounded by
// +-3.45). Kaldi draws true Gaussians; for dither, whose job is to keep silent frames off
// log(0), the difference does not matter and this is about 20x cheaper. in == out is allowed.
void AddDither(const float* in, int n, uint32_t key, float scale, float* out);

// The per-frame key: a mix of the stream key (e.g. StreamKey(seed, epoch, record)) and the
// frame index, so overlapping frames get independent noise as in Kaldi.
uint32_t DitherFrameKey(uint64_t stream_key, int64_t frame);

}  // namespace sluice::features
