// Linear layer: out = in W^T + b, fp32 row-major (double for gradient checks).
//   in [N, C], weight [OC, C] (PyTorch's nn.Linear layout), bias [OC] (may be null), out [N, OC].
// Like every backward in reference/, LinearBackward ADDS into its gradient outputs (the
// caller zeroes them), so residual branches and shared inputs accumulate naturally.
#pragma once

namespace sluice::reference {

template <typename Real>
void LinearForward(Real* out, const Real* in, const Real* weight, const Real* bias, int N, int C,
                   int OC);

// din [N, C] (may be null: no input gradient), dweight [OC, C], dbias [OC] (may be null).
template <typename Real>
void LinearBackward(Real* din, Real* dweight, Real* dbias, const Real* dout, const Real* in,
                    const Real* weight, int N, int C, int OC);

}  // namespace sluice::reference
