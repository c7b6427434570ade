// float32 <-> IEEE float16 and bfloat16, round to nearest even, for Batch::features() in
// DType::kFloat16 / kBFloat16 and for precomputed kFeaturesF16 fields.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::loader {

uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
uint16_t FloatToBFloat16(float f);

void FloatToHalf(const float* in, size_t n, uint16_t* out);
void HalfToFloat(const uint16_t* in, size_t n, float* out);
void FloatToBFloat16(const float* in, size_t n, uint16_t* out);

}  // namespace sluice::loader
