#include "reference/conv2d.h"

#include <cstddef>

namespace sluice::reference {

template <typename Real>
void Conv2dForward(Real* out, const Real* in, const Real* weight, const Real* bias, int B, int Cin,
                   int H, int W, int Cout) {
  const int Ho = Conv2dOutSize(H), Wo = Conv2dOutSize(W);
  for (int b = 0; b < B; ++b) {
    for (int co = 0; co < Cout; ++co) {
      Real* y = out + (static_cast<size_t>(b) * Cout + co) * Ho * Wo;
      for (int i = 0; i < Ho * Wo; ++i) y[i] = bias[co];
      for (int ci = 0; ci < Cin; ++ci) {
        const Real* x = in + (static_cast<size_t>(b) * Cin + ci) * H * W;
        const Real* w = weight + (static_cast<size_t>(co) * Cin + ci) * 9;
        for (int ho = 0; ho < Ho; ++ho)
          for (int kh = 0; kh < 3; ++kh) {
            const Real* xr = x + static_cast<size_t>(2 * ho + kh) * W;
            Real* yr = y + static_cast<size_t>(ho) * Wo;
            for (int kw = 0; kw < 3; ++kw) {
              const Real wk = w[kh * 3 + kw];
              for (int wo = 0; wo < Wo; ++wo) yr[wo] += wk * xr[2 * wo + kw];
            }
          }
      }
    }
  }
}

template <typename Real>
void Conv2dBackward(Real* din, Real* dweight, Real* dbias, const Real* dout, const Real* in,
                    const Real* weight, int B, int Cin, int H, int W, int Cout) {
  const int Ho = Conv2dOutSize(H), Wo = Conv2dOutSize(W);
  for (int b = 0; b < B; ++b) {
    for (int co = 0; co < Cout; ++co) {
      const Real* dy = dout + (static_cast<size_t>(b) * Cout + co) * Ho * Wo;
      for (int i = 0; i < Ho * Wo; ++i) dbias[co] += dy[i];
      for (int ci = 0; ci < Cin; ++ci) {
        const Real* x = in + (static_cast<size_t>(b) * Cin + ci) * H * W;
        Real* dx = din ? din + (static_cast<size_t>(b) * Cin + ci) * H * W : nullptr;
        const Real* w = weight + (static_cast<size_t>(co) * Cin + ci) * 9;
        Real* dw = dweight + (static_cast<size_t>(co) * Cin + ci) * 9;
        for (int ho = 0; ho < Ho; ++ho)
          for (int kh = 0; kh < 3; ++kh) {
            const Real* xr = x + static_cast<size_t>(2 * ho + kh) * W;
            const Real* dyr = dy + static_cast<size_t>(ho) * Wo;
            for (int kw = 0; kw < 3; ++kw) {
              Real acc = 0;
              for (int wo = 0; wo < Wo; ++wo) acc += dyr[wo] * xr[2 * wo + kw];
              dw[kh * 3 + kw] += acc;
              if (dx) {
                Real* dxr = dx + static_cast<size_t>(2 * ho + kh) * W;
                const Real wk = w[kh * 3 + kw];
                for (int wo = 0; wo < Wo; ++wo) dxr[2 * wo + kw] += wk * dyr[wo];
              }
            }
          }
      }
    }
  }
}

template void Conv2dForward<float>(float*, const float*, const float*, const float*, int, int, int,
                                   int, int);
template void Conv2dForward<double>(double*, const double*, const double*, const double*, int, int,
                                    int, int, int);
template void Conv2dBackward<float>(float*, float*, float*, const float*, const float*,
                                    const float*, int, int, int, int, int);
template void Conv2dBackward<double>(double*, double*, double*, const double*, const double*,
                                     const double*, int, int, int, int, int);

}  // namespace sluice::reference
