// IEEE 754 binary16 and bfloat16 conversion: precomputed features stored as float16
// (shardify --features) and the loader's float16 / bfloat16 batches. Portable bit
// arithmetic; round to nearest, ties to even.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::features {

// Overflow gives +-Inf, NaN stays NaN, tiny values become subnormals or zero.
void FloatToHalf(const float* in, size_t n, uint16_t* out);
// Exact (every binary16 value is a float).
void HalfToFloat(const uint16_t* in, size_t n, float* out);

// bfloat16: the top 16 bits of a float, rounded to nearest even; NaN stays NaN.
void FloatToBFloat16(const float* in, size_t n, uint16_t* out);

}  // namespace sluice::features
