// Encoding int16 PCM as an audio file in memory (libsndfile virtual I/O): what `shardify export`
// writes for other tools to read, and the `flac` codec of shard records (flac.h). Mono or
// interleaved channels; lossless, and byte-deterministic for a given libsndfile/libFLAC (no time
// stamps are written; FLAC's STREAMINFO MD5 is a function of the samples).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"

namespace sluice::features {

enum class AudioContainer {
  kWav,   // RIFF WAVE, 16-bit PCM
  kFlac,  // FLAC, 16-bit
};

// ".wav" or ".flac".
const char* AudioContainerExtension(AudioContainer c);

// Encodes `frames` frames of `channels` interleaved int16 samples at `sample_rate` Hz into *out
// (replaced). InvalidArgument when frames == 0, channels < 1 or the rate is outside the
// container's range (FLAC: 1 to 655350 Hz); IOError if libsndfile fails.
Status EncodePcm16(const int16_t* pcm, size_t frames, int channels, int sample_rate,
                   AudioContainer container, std::vector<uint8_t>* out);

}  // namespace sluice::features
