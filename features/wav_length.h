// The length a RIFF/WAVE header declares, read from the bytes themselves. libsndfile shortens a
// WAV whose data chunk claims more bytes than the file holds to what is there (it only logs
// "should be"), so a file cut off in a copy would decode as a shorter clip with no error; audio.cc
// compares the two and rejects the file unless told to keep what it holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace sluice::features::internal {

// Reads n bytes at offset into dst; false past the end or on an error.
using ReadAt = std::function<bool(uint64_t offset, size_t n, void* dst)>;

struct WavLength {
  int64_t declared = -1;  // frames the "data" chunk's size declares
  int64_t present = -1;   // frames the file's bytes after the chunk header hold
};

// The lengths of a RIFF/WAVE file of `file_size` bytes holding PCM, float or G.711 samples
// (one frame = the "fmt " chunk's block align). Both -1 when the bytes are not such a file,
// declare no definite length (size 0 or 0xFFFFFFFF, as streaming writers leave it) or cannot be
// walked to a data chunk.
WavLength WavFrames(const ReadAt& read, uint64_t file_size);

}  // namespace sluice::features::internal
