#include "features/half.h"

#include <cstring>

#include <bit>

namespace sluice::features {
namespace {

uint16_t ToHalf(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // Inf or NaN (NaN keeps a quiet payload bit)
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x0200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): shift the mantissa with its implicit bit into place, rounding.
    if (abs < 0x33000000u) return sign;  // below half the smallest subnormal: zero
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x007fffffu) | 0x00800000u;
    const uint32_t shift = 126 - e;  // 14 + (127 - 15 - e) + ... brings m to 10-bit subnormal
    const uint32_t half_m = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    const uint32_t rounded = half_m + ((rem > halfway || (rem == halfway && (half_m & 1))) ? 1 : 0);
    return static_cast<uint16_t>(sign | rounded);
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even.
  const uint32_t rebiased = abs - 0x38000000u;  // (127 - 15) << 23
  const uint32_t rounded = rebiased + 0x0fffu + ((rebiased >> 13) & 1u);
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

float ToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t m = h & 0x03ffu;
  if (e == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  if (e != 0) return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
  // Subnormal or zero: m * 2^-24, exact in float.
  const float v = static_cast<float>(m) * 5.9604644775390625e-8f;
  return sign != 0 ? -v : v;
}

}  // namespace

void FloatToHalf(const float* in, size_t n, uint16_t* out) {
  for (size_t i = 0; i < n; ++i) out[i] = ToHalf(in[i]);
}

void HalfToFloat(const uint16_t* in, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = ToFloat(in[i]);
}

void FloatToBFloat16(const float* in, size_t n, uint16_t* out) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t x;
    std::memcpy(&x, &in[i], 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
      out[i] = static_cast<uint16_t>((x >> 16) | 0x40u);  // keep NaN a (quiet) NaN
      continue;
    }
    x += 0x7fffu + ((x >> 16) & 1u);
    out[i] = static_cast<uint16_t>(x >> 16);
  }
}

}  // namespace sluice::features
