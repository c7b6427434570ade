// GPT-2's byte-level alphabet (HF tokenizers' ByteLevel): each byte is written as one printable
// character so that a vocabulary of byte strings can be stored as text. Printable Latin-1 bytes
// stand for themselves; the others (controls, space, 0x7F-0xA0, 0xAD) take U+0100 upwards in
// byte order.
#pragma once

#include <array>
#include <cstdint>

namespace sluice::features {

// The code point that stands for byte b.
inline char32_t ByteLevelChar(uint8_t b) {
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    char32_t next = 0x100;
    for (int c = 0; c < 256; ++c) {
      const bool printable = (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE;
      t[c] = printable ? static_cast<char32_t>(c) : next++;
    }
    return t;
  }();
  return table[b];
}

// The byte a code point of the alphabet stands for, or -1.
inline int ByteOfByteLevelChar(char32_t c) {
  if (c < 0x100) {
    const bool printable = (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE;
    return printable ? static_cast<int>(c) : -1;
  }
  if (c >= 0x100 + 68) return -1;  // 68 bytes are not printable
  static const std::array<int16_t, 68> table = [] {
    std::array<int16_t, 68> t{};
    for (int b = 0; b < 256; ++b)
      if (ByteLevelChar(static_cast<uint8_t>(b)) >= 0x100) t[ByteLevelChar(b) - 0x100] = b;
    return t;
  }();
  return table[c - 0x100];
}

}  // namespace sluice::features
