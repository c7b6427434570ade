#include "reference/dropout.h"

namespace sluice::reference {
namespace {

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

}  // namespace

float DropoutUniform(const DropoutKey& key, uint64_t index) {
  uint64_t h = Mix(key.seed + kGolden);
  h = Mix(h ^ (key.step + kGolden));
  h = Mix(h ^ (key.tensor_id + kGolden));
  h = Mix(h ^ (index + kGolden));
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

template <typename Real>
void DropoutForward(Real* out, const Real* in, size_t n, float p, const DropoutKey& key) {
  if (p <= 0) {
    if (out != in)
      for (size_t i = 0; i < n; ++i) out[i] = in[i];
    return;
  }
  const Real scale = Real(1) / (Real(1) - p);
  for (size_t i = 0; i < n; ++i) out[i] = DropoutUniform(key, i) >= p ? in[i] * scale : Real(0);
}

template <typename Real>
void DropoutBackward(Real* din, const Real* dout, size_t n, float p, const DropoutKey& key) {
  if (p <= 0) {
    for (size_t i = 0; i < n; ++i) din[i] += dout[i];
    return;
  }
  const Real scale = Real(1) / (Real(1) - p);
  for (size_t i = 0; i < n; ++i)
    if (DropoutUniform(key, i) >= p) din[i] += dout[i] * scale;
}

template void DropoutForward<float>(float*, const float*, size_t, float, const DropoutKey&);
template void DropoutForward<double>(double*, const double*, size_t, float, const DropoutKey&);
template void DropoutBackward<float>(float*, const float*, size_t, float, const DropoutKey&);
template void DropoutBackward<double>(double*, const double*, size_t, float, const DropoutKey&);

}  // namespace sluice::reference
