#include "features/wav_length.h"

#include <algorithm>
#include <cstring>

namespace sluice::features::internal {
namespace {

uint32_t Le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

}  // namespace

WavLength WavFrames(const ReadAt& read, uint64_t file_size) {
  const WavLength unknown;
  uint8_t riff[12];
  if (!read(0, sizeof riff, riff)) return unknown;
  if (std::memcmp(riff, "RIFF", 4) != 0 || std::memcmp(riff + 8, "WAVE", 4) != 0) return unknown;
  uint32_t block_align = 0;
  bool frames_are_blocks = false;  // compressed formats (ADPCM, GSM) pack many frames per block
  uint64_t at = 12;
  // Chunks before "data" are few (fmt, fact, LIST, PEAK, ...): a bound keeps a damaged file from
  // making this walk long.
  for (int chunk = 0; chunk < 64; ++chunk) {
    uint8_t head[8];
    if (!read(at, sizeof head, head)) return unknown;
    const uint32_t size = Le32(head + 4);
    if (std::memcmp(head, "fmt ", 4) == 0) {
      uint8_t fmt[14];
      if (size < sizeof fmt || !read(at + 8, sizeof fmt, fmt)) return unknown;
      const uint32_t tag = uint32_t(fmt[0]) | uint32_t(fmt[1]) << 8;
      // PCM, IEEE float, A-law, mu-law, and WAVE_FORMAT_EXTENSIBLE (PCM or float in practice).
      frames_are_blocks = tag == 1 || tag == 3 || tag == 6 || tag == 7 || tag == 0xFFFE;
      block_align = uint32_t(fmt[12]) | uint32_t(fmt[13]) << 8;
    } else if (std::memcmp(head, "data", 4) == 0) {
      if (!frames_are_blocks || block_align == 0 || size == 0 || size == 0xFFFFFFFFu)
        return unknown;
      const uint64_t start = at + 8;
      const uint64_t there = file_size > start ? file_size - start : 0;
      return {static_cast<int64_t>(size / block_align),
              static_cast<int64_t>(std::min<uint64_t>(size, there) / block_align)};
    }
    at += 8 + uint64_t(size) + (size & 1);  // chunks are padded to an even size
  }
  return unknown;
}

}  // namespace sluice::features::internal
