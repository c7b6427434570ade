#include "gpu/reference/activation.h"

#include <cmath>
#include <numbers>

namespace sluice::reference {

template <typename Real>
void GeluForward(Real* out, const Real* in, size_t n) {
  const double inv_sqrt2 = 1.0 / std::numbers::sqrt2;
  for (size_t i = 0; i < n; ++i) {
    const double x = in[i];
    out[i] = static_cast<Real>(0.5 * x * (1.0 + std::erf(x * inv_sqrt2)));
  }
}

// d gelu / dx = Phi(x) + x * phi(x), phi the standard normal density.
template <typename Real>
void GeluBackward(Real* din, const Real* dout, const Real* in, size_t n) {
  const double inv_sqrt2 = 1.0 / std::numbers::sqrt2;
  const double inv_sqrt_2pi = std::numbers::inv_sqrtpi * inv_sqrt2;
  for (size_t i = 0; i < n; ++i) {
    const double x = in[i];
    const double cdf = 0.5 * (1.0 + std::erf(x * inv_sqrt2));
    const double pdf = inv_sqrt_2pi * std::exp(-0.5 * x * x);
    din[i] += static_cast<Real>(dout[i] * (cdf + x * pdf));
  }
}

template <typename Real>
void ReluForward(Real* out, const Real* in, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = in[i] > 0 ? in[i] : Real(0);
}

template <typename Real>
void ReluBackward(Real* din, const Real* dout, const Real* in, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (in[i] > 0) din[i] += dout[i];
}

template void GeluForward<float>(float*, const float*, size_t);
template void GeluForward<double>(double*, const double*, size_t);
template void GeluBackward<float>(float*, const float*, const float*, size_t);
template void GeluBackward<double>(double*, const double*, const double*, size_t);
template void ReluForward<float>(float*, const float*, size_t);
template void ReluForward<double>(double*, const double*, size_t);
template void ReluBackward<float>(float*, const float*, const float*, size_t);
template void ReluBackward<double>(double*, const double*, const double*, size_t);

}  // namespace sluice::reference
