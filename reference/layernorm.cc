#include "reference/layernorm.h"

#include <cmath>
#include <cstddef>

namespace sluice::reference {

template <typename Real>
void LayerNormForward(Real* out, Real* mean, Real* rstd, const Real* in, const Real* gamma,
                      const Real* beta, int N, int C) {
  for (int n = 0; n < N; ++n) {
    const Real* x = in + static_cast<size_t>(n) * C;
    Real* y = out + static_cast<size_t>(n) * C;
    double m = 0;
    for (int c = 0; c < C; ++c) m += x[c];
    m /= C;
    double var = 0;
    for (int c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
    var /= C;
    const double r = 1.0 / std::sqrt(var + kLayerNormEps);
    for (int c = 0; c < C; ++c) y[c] = static_cast<Real>((x[c] - m) * r) * gamma[c] + beta[c];
    mean[n] = static_cast<Real>(m);
    rstd[n] = static_cast<Real>(r);
  }
}

// With xhat = (x - mean) * rstd and g = dout * gamma:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
template <typename Real>
void LayerNormBackward(Real* din, Real* dgamma, Real* dbeta, const Real* dout, const Real* in,
                       const Real* gamma, const Real* mean, const Real* rstd, int N, int C) {
  for (int n = 0; n < N; ++n) {
    const Real* x = in + static_cast<size_t>(n) * C;
    const Real* dy = dout + static_cast<size_t>(n) * C;
    Real* dx = din + static_cast<size_t>(n) * C;
    const Real m = mean[n], r = rstd[n];
    double g_mean = 0, gx_mean = 0;
    for (int c = 0; c < C; ++c) {
      const Real xhat = (x[c] - m) * r;
      const Real g = dy[c] * gamma[c];
      g_mean += g;
      gx_mean += g * xhat;
      dgamma[c] += dy[c] * xhat;
      dbeta[c] += dy[c];
    }
    g_mean /= C;
    gx_mean /= C;
    for (int c = 0; c < C; ++c) {
      const Real xhat = (x[c] - m) * r;
      dx[c] += r * static_cast<Real>(dy[c] * gamma[c] - g_mean - xhat * gx_mean);
    }
  }
}

template void LayerNormForward<float>(float*, float*, float*, const float*, const float*,
                                      const float*, int, int);
template void LayerNormForward<double>(double*, double*, double*, const double*, const double*,
                                       const double*, int, int);
template void LayerNormBackward<float>(float*, float*, float*, const float*, const float*,
                                       const float*, const float*, const float*, int, int);
template void LayerNormBackward<double>(double*, double*, double*, const double*, const double*,
                                        const double*, const double*, const double*, int, int);

}  // namespace sluice::reference
