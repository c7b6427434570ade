#include "reference/attention.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace sluice::reference {

template <typename Real>
void AttentionForward(Real* out, Real* att, const Real* qkv, const int32_t* lengths, int B, int T,
                      int C, int H) {
  const int hs = C / H;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  const size_t row = 3 * static_cast<size_t>(C);
  for (int b = 0; b < B; ++b) {
    const int len = std::clamp<int>(lengths[b], 0, T);
    const Real* base = qkv + static_cast<size_t>(b) * T * row;
    for (int h = 0; h < H; ++h) {
      for (int t = 0; t < T; ++t) {
        const Real* q = base + t * row + h * hs;
        Real* p = att + ((static_cast<size_t>(b) * H + h) * T + t) * T;
        Real* y = out + (static_cast<size_t>(b) * T + t) * C + h * hs;
        std::fill(p, p + T, Real(0));
        std::fill(y, y + hs, Real(0));
        if (len == 0) continue;
        double max = -INFINITY;
        for (int j = 0; j < len; ++j) {
          const Real* k = base + j * row + C + h * hs;
          double s = 0;
          for (int i = 0; i < hs; ++i) s += q[i] * k[i];
          p[j] = static_cast<Real>(s * scale);
          max = std::max<double>(max, p[j]);
        }
        double sum = 0;
        for (int j = 0; j < len; ++j) sum += std::exp(p[j] - max);
        for (int j = 0; j < len; ++j) p[j] = static_cast<Real>(std::exp(p[j] - max) / sum);
        for (int j = 0; j < len; ++j) {
          const Real* v = base + j * row + 2 * C + h * hs;
          for (int i = 0; i < hs; ++i) y[i] += p[j] * v[i];
        }
      }
    }
  }
}

// Per (b, h, t): datt_j = dy . v_j;  dv_j += p_j dy;  ds_j = p_j (datt_j - sum_k p_k datt_k);
// dq += scale * sum_j ds_j k_j;  dk_j += scale * ds_j q.
template <typename Real>
void AttentionBackward(Real* dqkv, const Real* dout, const Real* qkv, const Real* att,
                       const int32_t* lengths, int B, int T, int C, int H) {
  const int hs = C / H;
  const Real scale = static_cast<Real>(1.0 / std::sqrt(static_cast<double>(hs)));
  const size_t row = 3 * static_cast<size_t>(C);
  std::vector<Real> ds(T);
  for (int b = 0; b < B; ++b) {
    const int len = std::clamp<int>(lengths[b], 0, T);
    const Real* base = qkv + static_cast<size_t>(b) * T * row;
    Real* dbase = dqkv + static_cast<size_t>(b) * T * row;
    for (int h = 0; h < H; ++h) {
      for (int t = 0; t < T && len > 0; ++t) {
        const Real* q = base + t * row + h * hs;
        Real* dq = dbase + t * row + h * hs;
        const Real* p = att + ((static_cast<size_t>(b) * H + h) * T + t) * T;
        const Real* dy = dout + (static_cast<size_t>(b) * T + t) * C + h * hs;
        double dot = 0;
        for (int j = 0; j < len; ++j) {
          const Real* v = base + j * row + 2 * C + h * hs;
          Real* dv = dbase + j * row + 2 * C + h * hs;
          double da = 0;
          for (int i = 0; i < hs; ++i) {
            da += dy[i] * v[i];
            dv[i] += p[j] * dy[i];
          }
          ds[j] = static_cast<Real>(da);
          dot += p[j] * da;
        }
        for (int j = 0; j < len; ++j) {
          const Real d = static_cast<Real>(p[j] * (ds[j] - dot)) * scale;
          const Real* k = base + j * row + C + h * hs;
          Real* dk = dbase + j * row + C + h * hs;
          for (int i = 0; i < hs; ++i) {
            dq[i] += d * k[i];
            dk[i] += d * q[i];
          }
        }
      }
    }
  }
}

template void AttentionForward<float>(float*, float*, const float*, const int32_t*, int, int, int,
                                      int);
template void AttentionForward<double>(double*, double*, const double*, const int32_t*, int, int,
                                       int, int);
template void AttentionBackward<float>(float*, const float*, const float*, const float*,
                                       const int32_t*, int, int, int, int);
template void AttentionBackward<double>(double*, const double*, const double*, const double*,
                                        const int32_t*, int, int, int, int);

}  // namespace sluice::reference
