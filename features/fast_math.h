// Inline log for the per-frame loops, written so GCC vectorises whole arrays of them (std::log
// is a library call per element and keeps the loop scalar). Internal to features/.
//
// Accuracy: LogPositive is the Cephes single-precision polynomial on a branch-free range
// reduction, within 1 ulp of the true logarithm for positive normal floats (checked against
// double precision in tests/features/fast_math_test.cc); Log1pNonNegative corrects the rounding of
// 1 + x so small arguments keep their relative accuracy.
#pragma once

#include <bit>
#include <cstdint>

namespace sluice::features::internal {

// log(x) for positive, normal, finite x (callers floor their input first). Branch-free, so a loop
// over an array vectorises: integer arithmetic on the bits splits x into 2^e * m with m in
// [sqrt(1/2), sqrt(2)), where the polynomial in m - 1 is accurate.
inline float LogPositive(float x) {
  constexpr int32_t kSqrtHalfBits = 0x3f3504f3;  // bits of 0.70710677f
  const int32_t bits = std::bit_cast<int32_t>(x);
  const int32_t t = bits - kSqrtHalfBits;
  const int32_t e =
      t >> 23;  // arithmetic shift: the exponent, one lower when m would be < sqrt(1/2)
  const float m = std::bit_cast<float>((t & 0x007fffff) + kSqrtHalfBits) - 1.0f;
  const float z = m * m;
  float y = 7.0376836292e-2f;
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  const float fe = static_cast<float>(e);
  // ln 2 split into a part exact in float (0.693359375) and a small correction.
  y += -2.12194440e-4f * fe;
  y += -0.5f * z;
  return m + y + 0.693359375f * fe;
}

// log(1 + x) for finite x >= 0, accurate for tiny x too. u = 1 + x is rounded; the first-order
// correction (x - (u - 1)) / u restores what the rounding lost (and is exactly x when u == 1,
// where log(u) = 0), without a branch.
inline float Log1pNonNegative(float x) {
  const float u = 1.0f + x;
  return LogPositive(u) + (x - (u - 1.0f)) / u;
}

}  // namespace sluice::features::internal
