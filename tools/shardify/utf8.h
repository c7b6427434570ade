// UTF-8 validation for transcripts and text lines (RFC 3629: no overlongs,
// no surrogates, nothing above U+10FFFF).
#pragma once

#include <cstddef>
#include <string_view>

namespace sluice::shardify {

// Returns true if `s` is valid UTF-8; otherwise sets *bad_offset to the first bad byte.
inline bool ValidUtf8(std::string_view s, size_t* bad_offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned c = p[i];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) { ++i; continue; }
    else if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
    else { *bad_offset = i; return false; }
    if (i + len > n) { *bad_offset = i; return false; }
    if (p[i + 1] < lo || p[i + 1] > hi) { *bad_offset = i; return false; }
    for (size_t k = 2; k < len; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) { *bad_offset = i; return false; }
    i += len;
  }
  return true;
}

}  // namespace sluice::shardify
