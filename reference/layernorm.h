// LayerNorm over the last dimension: out = (x - mean) * rstd * gamma + beta, rstd = 1/sqrt(var +
// eps) with the biased variance (PyTorch's nn.LayerNorm). in/out [N, C]; gamma, beta [C]; mean,
// rstd [N] are saved by the forward for the backward. Backward adds into din, dgamma, dbeta.
#pragma once

namespace sluice::reference {

inline constexpr double kLayerNormEps = 1e-5;

template <typename Real>
void LayerNormForward(Real* out, Real* mean, Real* rstd, const Real* in, const Real* gamma,
                      const Real* beta, int N, int C);

template <typename Real>
void LayerNormBackward(Real* din, Real* dgamma, Real* dbeta, const Real* dout, const Real* in,
                       const Real* gamma, const Real* mean, const Real* rstd, int N, int C);

}  // namespace sluice::reference
