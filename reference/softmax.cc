#include "reference/softmax.h"

#include <cmath>
#include <cstddef>

namespace sluice::reference {
namespace {

// max and log(sum exp(x - max)) of one row, accumulated in double.
template <typename Real>
void RowStats(const Real* x, int V, double* max, double* log_sum) {
  double m = x[0];
  for (int j = 1; j < V; ++j) m = x[j] > m ? x[j] : m;
  double s = 0;
  for (int j = 0; j < V; ++j) s += std::exp(x[j] - m);
  *max = m;
  *log_sum = std::log(s);
}

}  // namespace

template <typename Real>
void SoftmaxForward(Real* out, const Real* in, int N, int V) {
  for (int n = 0; n < N; ++n) {
    const Real* x = in + static_cast<size_t>(n) * V;
    Real* y = out + static_cast<size_t>(n) * V;
    double m, ls;
    RowStats(x, V, &m, &ls);
    for (int j = 0; j < V; ++j) y[j] = static_cast<Real>(std::exp(x[j] - m - ls));
  }
}

template <typename Real>
void SoftmaxBackward(Real* din, const Real* dout, const Real* out, int N, int V) {
  for (int n = 0; n < N; ++n) {
    const Real* p = out + static_cast<size_t>(n) * V;
    const Real* dy = dout + static_cast<size_t>(n) * V;
    Real* dx = din + static_cast<size_t>(n) * V;
    double dot = 0;
    for (int j = 0; j < V; ++j) dot += dy[j] * p[j];
    for (int j = 0; j < V; ++j) dx[j] += static_cast<Real>(p[j] * (dy[j] - dot));
  }
}

template <typename Real>
void LogSoftmaxForward(Real* out, const Real* in, int N, int V) {
  for (int n = 0; n < N; ++n) {
    const Real* x = in + static_cast<size_t>(n) * V;
    Real* y = out + static_cast<size_t>(n) * V;
    double m, ls;
    RowStats(x, V, &m, &ls);
    for (int j = 0; j < V; ++j) y[j] = static_cast<Real>(x[j] - m - ls);
  }
}

template <typename Real>
void LogSoftmaxBackward(Real* din, const Real* dout, const Real* out, int N, int V) {
  for (int n = 0; n < N; ++n) {
    const Real* y = out + static_cast<size_t>(n) * V;
    const Real* dy = dout + static_cast<size_t>(n) * V;
    Real* dx = din + static_cast<size_t>(n) * V;
    double sum = 0;
    for (int j = 0; j < V; ++j) sum += dy[j];
    for (int j = 0; j < V; ++j) dx[j] += static_cast<Real>(dy[j] - std::exp(double(y[j])) * sum);
  }
}

#define SLUICE_INSTANTIATE(Real)                                               \
  template void SoftmaxForward<Real>(Real*, const Real*, int, int);            \
  template void SoftmaxBackward<Real>(Real*, const Real*, const Real*, int, int); \
  template void LogSoftmaxForward<Real>(Real*, const Real*, int, int);         \
  template void LogSoftmaxBackward<Real>(Real*, const Real*, const Real*, int, int);
SLUICE_INSTANTIATE(float)
SLUICE_INSTANTIATE(double)
#undef SLUICE_INSTANTIATE

}  // namespace sluice::reference
