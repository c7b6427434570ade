// Row-wise softmax and log_softmax over [N, V] (max-subtracted, so any finite logits are safe).
// Backward adds into din and reads the forward's OUTPUT:
//   softmax:     din += p * (dout - sum_j dout_j p_j)
//   log_softmax: din += dout - exp(out) * sum_j dout_j
#pragma once

namespace sluice::reference {

template <typename Real>
void SoftmaxForward(Real* out, const Real* in, int N, int V);
template <typename Real>
void SoftmaxBackward(Real* din, const Real* dout, const Real* out, int N, int V);

template <typename Real>
void LogSoftmaxForward(Real* out, const Real* in, int N, int V);
template <typename Real>
void LogSoftmaxBackward(Real* din, const Real* dout, const Real* out, int N, int V);

}  // namespace sluice::reference
