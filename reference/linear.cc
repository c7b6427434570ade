#include "reference/linear.h"

#include <cstddef>

namespace sluice::reference {

template <typename Real>
void LinearForward(Real* out, const Real* in, const Real* weight, const Real* bias, int N, int C,
                   int OC) {
  for (int n = 0; n < N; ++n) {
    const Real* x = in + static_cast<size_t>(n) * C;
    Real* y = out + static_cast<size_t>(n) * OC;
    for (int o = 0; o < OC; ++o) {
      const Real* w = weight + static_cast<size_t>(o) * C;
      Real acc = bias ? bias[o] : Real(0);
      for (int c = 0; c < C; ++c) acc += x[c] * w[c];
      y[o] = acc;
    }
  }
}

template <typename Real>
void LinearBackward(Real* din, Real* dweight, Real* dbias, const Real* dout, const Real* in,
                    const Real* weight, int N, int C, int OC) {
  for (int n = 0; n < N; ++n) {
    const Real* x = in + static_cast<size_t>(n) * C;
    const Real* dy = dout + static_cast<size_t>(n) * OC;
    Real* dx = din ? din + static_cast<size_t>(n) * C : nullptr;
    for (int o = 0; o < OC; ++o) {
      const Real d = dy[o];
      if (dbias) dbias[o] += d;
      const Real* w = weight + static_cast<size_t>(o) * C;
      Real* dw = dweight + static_cast<size_t>(o) * C;
      for (int c = 0; c < C; ++c) dw[c] += d * x[c];
      if (dx)
        for (int c = 0; c < C; ++c) dx[c] += d * w[c];
    }
  }
}

template void LinearForward<float>(float*, const float*, const float*, const float*, int, int, int);
template void LinearForward<double>(double*, const double*, const double*, const double*, int, int,
                                    int);
template void LinearBackward<float>(float*, float*, float*, const float*, const float*,
                                    const float*, int, int, int);
template void LinearBackward<double>(double*, double*, double*, const double*, const double*,
                                     const double*, int, int, int);

}  // namespace sluice::reference
