#include "reference/activation.h"

#include <cmath>
#include <numbers>

namespace sluice::reference {
namespace {

// Without overflow for either sign: exp of a negative argument only.
double Sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}

}  // namespace

const char* ActivationName(Activation a) { return a == Activation::kSwish ? "swish" : "gelu"; }

bool ParseActivation(std::string_view name, Activation* out) {
  if (name == "gelu") {
    *out = Activation::kGelu;
  } else if (name == "swish" || name == "silu") {
    *out = Activation::kSwish;
  } else {
    return false;
  }
  return true;
}

template <typename Real>
void ActivationForward(Activation a, Real* out, const Real* in, size_t n) {
  if (a == Activation::kSwish) {
    SwishForward(out, in, n);
  } else {
    GeluForward(out, in, n);
  }
}

template <typename Real>
void ActivationBackward(Activation a, Real* din, const Real* dout, const Real* in, size_t n) {
  if (a == Activation::kSwish) {
    SwishBackward(din, dout, in, n);
  } else {
    GeluBackward(din, dout, in, n);
  }
}

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
void SwishForward(Real* out, const Real* in, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const double x = in[i];
    out[i] = static_cast<Real>(x * Sigmoid(x));
  }
}

// d swish / dx = s + x s (1 - s) with s = sigmoid(x).
template <typename Real>
void SwishBackward(Real* din, const Real* dout, const Real* in, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const double x = in[i];
    const double s = Sigmoid(x);
    din[i] += static_cast<Real>(dout[i] * (s + x * s * (1.0 - s)));
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
template void SwishForward<float>(float*, const float*, size_t);
template void SwishForward<double>(double*, const double*, size_t);
template void SwishBackward<float>(float*, const float*, const float*, size_t);
template void SwishBackward<double>(double*, const double*, const double*, size_t);
template void ActivationForward<float>(Activation, float*, const float*, size_t);
template void ActivationForward<double>(Activation, double*, const double*, size_t);
template void ActivationBackward<float>(Activation, float*, const float*, const float*, size_t);
template void ActivationBackward<double>(Activation, double*, const double*, const double*, size_t);
template void ReluForward<float>(float*, const float*, size_t);
template void ReluForward<double>(double*, const double*, size_t);
template void ReluBackward<float>(float*, const float*, const float*, size_t);
template void ReluBackward<double>(double*, const double*, const double*, size_t);

}  // namespace sluice::reference
