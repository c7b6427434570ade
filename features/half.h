// IEEE 754 binary16 conversion, for precomputed features stored as float16 (shardify
// --features, issue 3). Portable bit arithmetic; round to nearest, ties to even.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::features {

// Overflow gives +-Inf, NaN stays NaN, tiny values become subnormals or zero.
void FloatToHalf(const float* in, size_t n, uint16_t* out);
// Exact (every binary16 value is a float).
void HalfToFloat(const uint16_t* in, size_t n, float* out);

}  // namespace sluice::features
