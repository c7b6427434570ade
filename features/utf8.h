// UTF-8 validation and decoding for transcripts and text (RFC 3629: no
// overlongs, no surrogates, nothing above U+10FFFF).
#pragma once

#include <cstddef>
#include <string_view>

namespace sluice::features {

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
    else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      *bad_offset = i;
      return false;
    }
    if (i + len > n) { *bad_offset = i; return false; }
    if (p[i + 1] < lo || p[i + 1] > hi) { *bad_offset = i; return false; }
    for (size_t k = 2; k < len; ++k)
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) { *bad_offset = i; return false; }
    i += len;
  }
  return true;
}

// Decodes the code point starting at s[*pos] and advances *pos past it.
// `s` must be valid UTF-8 (checked with ValidUtf8 first).
inline char32_t NextCodePoint(std::string_view s, size_t* pos) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + *pos;
  char32_t c = p[0];
  size_t len = 1;
  if (c >= 0xF0) { c &= 0x07; len = 4; }
  else if (c >= 0xE0) { c &= 0x0F; len = 3; }
  else if (c >= 0xC0) { c &= 0x1F; len = 2; }
  for (size_t k = 1; k < len; ++k) c = (c << 6) | (p[k] & 0x3F);
  *pos += len;
  return c;
}

// Appends the UTF-8 encoding of code point c.
inline void AppendUtf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace sluice::features
