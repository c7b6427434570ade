#include "features/pcm.h"

#include <cmath>

namespace sluice::features {

void FloatToPcm16(const float* in, size_t n, int16_t* out) {
  for (size_t i = 0; i < n; ++i) {
    float v = in[i] * 32768.0f;
    v = v == v ? v : 0.0f;  // NaN fails every comparison; map it to silence, not to a clamp bound
    v = std::fmin(std::fmax(v, -32768.0f), 32767.0f);
    out[i] = static_cast<int16_t>(std::nearbyint(v));
  }
}

size_t CountBeyondFullScale(const float* in, size_t n, float* peak) {
  size_t count = 0;
  float max = 0;
  for (size_t i = 0; i < n; ++i) {
    const float v = in[i] * 32768.0f;
    count += static_cast<size_t>(v > 32767.5f || v < -32768.5f);
    max = std::fmax(max, std::fabs(in[i]));
  }
  if (peak != nullptr) *peak = max;
  return count;
}

void Pcm16ToFloat(const int16_t* in, size_t n, float* out, float scale) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]) * scale;
}

}  // namespace sluice::features
