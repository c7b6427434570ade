#include "reference/optimizer.h"

#include <cmath>

namespace sluice::reference {

template <typename Real>
void AdamWUpdate(Real* params, const Real* grads, Real* m, Real* v, size_t n, double lr,
                 double weight_decay, int64_t step, const AdamWOptions& o) {
  const double c1 = 1.0 - std::pow(o.beta1, static_cast<double>(step));
  const double c2 = 1.0 - std::pow(o.beta2, static_cast<double>(step));
  for (size_t i = 0; i < n; ++i) {
    const double g = grads[i];
    const double mi = o.beta1 * m[i] + (1.0 - o.beta1) * g;
    const double vi = o.beta2 * v[i] + (1.0 - o.beta2) * g * g;
    m[i] = static_cast<Real>(mi);
    v[i] = static_cast<Real>(vi);
    const double update = (mi / c1) / (std::sqrt(vi / c2) + o.eps) + weight_decay * params[i];
    params[i] = static_cast<Real>(params[i] - lr * update);
  }
}

template <typename Real>
double GlobalNorm(const Real* grads, size_t n) {
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<double>(grads[i]) * grads[i];
  return std::sqrt(sum);
}

template <typename Real>
double ClipByGlobalNorm(Real* grads, size_t n, double max_norm) {
  const double norm = GlobalNorm(grads, n);
  if (max_norm > 0 && norm > max_norm) {
    const Real scale = static_cast<Real>(max_norm / norm);
    for (size_t i = 0; i < n; ++i) grads[i] *= scale;
  }
  return norm;
}

template <typename Real>
AdamW<Real>::AdamW(std::vector<ParamTensor> layout, const AdamWOptions& options)
    : layout_(std::move(layout)), options_(options) {
  const size_t n = layout_.empty() ? 0 : layout_.back().offset + layout_.back().count;
  m_.assign(n, Real(0));
  v_.assign(n, Real(0));
}

template <typename Real>
bool AdamW<Real>::Restore(std::vector<Real> m, std::vector<Real> v, int64_t step) {
  if (m.size() != m_.size() || v.size() != v_.size() || step < 0) return false;
  m_ = std::move(m);
  v_ = std::move(v);
  step_ = step;
  return true;
}

template <typename Real>
void AdamW<Real>::Step(Real* params, const Real* grads, double lr) {
  ++step_;
  for (const ParamTensor& t : layout_) {
    const size_t o = t.offset;
    AdamWUpdate(params + o, grads + o, m_.data() + o, v_.data() + o, t.count, lr,
                t.decay ? options_.weight_decay : 0.0, step_, options_);
  }
}

template void AdamWUpdate<float>(float*, const float*, float*, float*, size_t, double, double,
                                 int64_t, const AdamWOptions&);
template void AdamWUpdate<double>(double*, const double*, double*, double*, size_t, double, double,
                                  int64_t, const AdamWOptions&);
template double GlobalNorm<float>(const float*, size_t);
template double GlobalNorm<double>(const double*, size_t);
template double ClipByGlobalNorm<float>(float*, size_t, double);
template double ClipByGlobalNorm<double>(double*, size_t, double);
template class AdamW<float>;
template class AdamW<double>;

}  // namespace sluice::reference
