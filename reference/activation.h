// Pointwise activations over n contiguous values. GELU is the exact (erf) form, PyTorch's
// nn.GELU() default: gelu(x) = x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)). Swish (SiLU, PyTorch's
// nn.SiLU) is x * sigmoid(x). Backward adds into din and reads the forward's input.
#pragma once

#include <cstddef>
#include <string_view>

namespace sluice::reference {

// The feed-forward nonlinearity of the encoder layers (ModelConfig::activation).
enum class Activation { kGelu, kSwish };
const char* ActivationName(Activation a);  // "gelu", "swish"
// "gelu", or "swish" / "silu" (the same function); false for anything else.
bool ParseActivation(std::string_view name, Activation* out);

// The chosen activation, forward and backward (the Gelu/Swish functions below).
template <typename Real>
void ActivationForward(Activation a, Real* out, const Real* in, size_t n);
template <typename Real>
void ActivationBackward(Activation a, Real* din, const Real* dout, const Real* in, size_t n);

template <typename Real>
void GeluForward(Real* out, const Real* in, size_t n);
template <typename Real>
void GeluBackward(Real* din, const Real* dout, const Real* in, size_t n);

template <typename Real>
void SwishForward(Real* out, const Real* in, size_t n);
template <typename Real>
void SwishBackward(Real* din, const Real* dout, const Real* in, size_t n);

template <typename Real>
void ReluForward(Real* out, const Real* in, size_t n);
// Gradient 0 at x <= 0 (the kink at 0 goes to the flat side, as PyTorch).
template <typename Real>
void ReluBackward(Real* din, const Real* dout, const Real* in, size_t n);

}  // namespace sluice::reference
