// AdamW (Loshchilov & Hutter: decoupled weight decay) fused over the flat parameter buffer, and
// gradient clipping by global norm. The update of one element, with t the 1-based step:
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr * ( (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + wd * p )
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "reference/model.h"

namespace sluice::reference {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;  // applied only to tensors with ParamTensor::decay
};

// One fused update of n elements; `weight_decay` already resolved for this range.
template <typename Real>
void AdamWUpdate(Real* params, const Real* grads, Real* m, Real* v, size_t n, double lr,
                 double weight_decay, int64_t step, const AdamWOptions& options);

// L2 norm of all n gradients (accumulated in double).
template <typename Real>
double GlobalNorm(const Real* grads, size_t n);

// Scales grads by max_norm / norm when norm > max_norm; returns the norm before clipping.
// max_norm <= 0 turns clipping off.
template <typename Real>
double ClipByGlobalNorm(Real* grads, size_t n, double max_norm);

// The optimizer state (m, v: one Real each per parameter) and the step counter.
template <typename Real>
class AdamW {
 public:
  AdamW(std::vector<ParamTensor> layout, const AdamWOptions& options);
  // Applies step step() + 1 with learning rate lr to params from grads, over every tensor.
  void Step(Real* params, const Real* grads, double lr);
  int64_t step() const { return step_; }
  const std::vector<Real>& m() const { return m_; }  // exposed for checkpoints
  const std::vector<Real>& v() const { return v_; }
  // Puts back state saved from m(), v() and step(): a resumed run continues bit for bit.
  // False (state unchanged) when the sizes do not match this layout.
  bool Restore(std::vector<Real> m, std::vector<Real> v, int64_t step);

 private:
  std::vector<ParamTensor> layout_;
  AdamWOptions options_;
  std::vector<Real> m_, v_;
  int64_t step_ = 0;
};

}  // namespace sluice::reference
