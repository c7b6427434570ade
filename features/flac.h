// FLAC in memory (libsndfile virtual I/O): the `flac` codec of shard records
// (docs/formats/shard.md). Mono int16 only; lossless, and encoding is byte-deterministic for a
// given libsndfile/libFLAC (no time stamps are written; the STREAMINFO MD5 is a function of the
// samples).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace sluice::features {

// Encodes n mono samples at `sample_rate` Hz as a complete FLAC stream into *out (replaced).
// InvalidArgument when n == 0 or the rate is outside FLAC's range; IOError if libsndfile fails.
Status EncodeFlac(const int16_t* pcm, size_t n, int sample_rate, std::vector<uint8_t>* out);

// Decodes a FLAC stream made by EncodeFlac (any mono 16-bit FLAC) into *out (replaced) and its
// rate into *sample_rate. Corruption, naming `name`, for anything that is not a complete mono
// 16-bit FLAC stream.
Status DecodeFlac(const uint8_t* data, size_t n, const std::string& name, std::vector<int16_t>* out,
                  int* sample_rate);

}  // namespace sluice::features
