// Pointwise activations over n contiguous values. GELU is the exact (erf) form, PyTorch's
// nn.GELU() default: gelu(x) = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)). Backward adds into din
// and reads the forward's input.
#pragma once

#include <cstddef>

namespace sluice::reference {

template <typename Real>
void GeluForward(Real* out, const Real* in, size_t n);
template <typename Real>
void GeluBackward(Real* din, const Real* dout, const Real* in, size_t n);

template <typename Real>
void ReluForward(Real* out, const Real* in, size_t n);
// Gradient 0 at x <= 0 (the kink at 0 goes to the flat side, as PyTorch).
template <typename Real>
void ReluBackward(Real* din, const Real* dout, const Real* in, size_t n);

}  // namespace sluice::reference
