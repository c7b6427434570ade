#include "reference/ctc.h"

#include <cmath>
#include <limits>
#include <string>

namespace sluice::reference {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// log(exp(a) + exp(b)) without overflow; -inf + -inf stays -inf (no inf - inf NaN).
double LogAdd(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  return a > b ? a + std::log1p(std::exp(b - a)) : b + std::log1p(std::exp(a - b));
}

Status CheckArgs(int input_length, int V, const int32_t* labels, int label_length,
                 const CtcOptions& options) {
  if (V < 1) return Status::InvalidArgument("ctc: vocabulary size " + std::to_string(V) + " < 1");
  if (options.blank < 0 || options.blank >= V)
    return Status::InvalidArgument("ctc: blank " + std::to_string(options.blank) +
                                   " outside [0, " + std::to_string(V) + ")");
  if (input_length < 0 || label_length < 0)
    return Status::InvalidArgument("ctc: negative input_length " + std::to_string(input_length) +
                                   " or label_length " + std::to_string(label_length));
  for (int i = 0; i < label_length; ++i) {
    if (labels[i] < 0 || labels[i] >= V || labels[i] == options.blank)
      return Status::InvalidArgument("ctc: label " + std::to_string(i) + " is " +
                                     std::to_string(labels[i]) + ", not a non-blank id in [0, " +
                                     std::to_string(V) + ")");
  }
  return Status::OK();
}

// The lattice over the extended label sequence l' = (blank, l1, blank, l2, ..., lL, blank) of
// length S = 2L + 1. alpha[t][s] and beta[t][s] both include the emission at (t, s), so the
// occupancy of (t, s) is alpha + beta - log y[t][l'_s] - log p. Kept in double whatever Real is:
// the reference should be the exact side of every comparison.
template <typename Real>
void Lattice(const Real* lp, int T, int V, const int32_t* labels, int L, int blank,
             std::vector<double>& work, Real* loss, Real* grad, bool zero_infinity) {
  const int S = 2 * L + 1;
  work.assign(2 * static_cast<size_t>(T) * S, kNegInf);
  double* alpha = work.data();
  double* beta = alpha + static_cast<size_t>(T) * S;
  auto sym = [&](int s) { return s % 2 == 0 ? blank : labels[s / 2]; };
  // The skip transition s-2 -> s exists for a label that differs from the label before it.
  auto can_skip = [&](int s) { return s % 2 == 1 && s >= 2 && labels[s / 2] != labels[s / 2 - 1]; };

  double log_p = kNegInf;
  if (T == 0) {
    log_p = L == 0 ? 0.0 : kNegInf;
  } else {
    alpha[0] = lp[blank];
    if (S > 1) alpha[1] = lp[sym(1)];
    for (int t = 1; t < T; ++t) {
      const double* prev = alpha + static_cast<size_t>(t - 1) * S;
      double* cur = alpha + static_cast<size_t>(t) * S;
      const Real* row = lp + static_cast<size_t>(t) * V;
      for (int s = 0; s < S; ++s) {
        double a = prev[s];
        if (s >= 1) a = LogAdd(a, prev[s - 1]);
        if (can_skip(s)) a = LogAdd(a, prev[s - 2]);
        cur[s] = a == kNegInf ? kNegInf : a + row[sym(s)];
      }
    }
    const double* last = alpha + static_cast<size_t>(T - 1) * S;
    log_p = S > 1 ? LogAdd(last[S - 1], last[S - 2]) : last[S - 1];
  }

  const bool impossible = log_p == kNegInf;
  *loss = impossible ? (zero_infinity ? Real(0) : std::numeric_limits<Real>::infinity())
                     : static_cast<Real>(-log_p);
  if (grad == nullptr || T == 0) return;
  if (impossible) {
    for (size_t i = 0; i < static_cast<size_t>(T) * V; ++i) grad[i] = 0;
    return;
  }

  const Real* lp_last = lp + static_cast<size_t>(T - 1) * V;
  double* b_last = beta + static_cast<size_t>(T - 1) * S;
  b_last[S - 1] = lp_last[sym(S - 1)];
  if (S > 1) b_last[S - 2] = lp_last[sym(S - 2)];
  for (int t = T - 2; t >= 0; --t) {
    const double* next = beta + static_cast<size_t>(t + 1) * S;
    double* cur = beta + static_cast<size_t>(t) * S;
    const Real* row = lp + static_cast<size_t>(t) * V;
    for (int s = 0; s < S; ++s) {
      double b = next[s];
      if (s + 1 < S) b = LogAdd(b, next[s + 1]);
      if (s + 2 < S && can_skip(s + 2)) b = LogAdd(b, next[s + 2]);
      cur[s] = b == kNegInf ? kNegInf : b + row[sym(s)];
    }
  }

  // d loss / d logits[t][k] = softmax[t][k] - posterior[t][k], the posterior being the summed
  // occupancy of the lattice states that emit k at t (it sums to 1 over k).
  for (int t = 0; t < T; ++t) {
    const Real* row = lp + static_cast<size_t>(t) * V;
    Real* g = grad + static_cast<size_t>(t) * V;
    for (int k = 0; k < V; ++k) g[k] = static_cast<Real>(std::exp(static_cast<double>(row[k])));
    const double* a = alpha + static_cast<size_t>(t) * S;
    const double* b = beta + static_cast<size_t>(t) * S;
    for (int s = 0; s < S; ++s) {
      if (a[s] == kNegInf || b[s] == kNegInf) continue;
      const int k = sym(s);
      g[k] -= static_cast<Real>(std::exp(a[s] + b[s] - row[k] - log_p));
    }
  }
}

}  // namespace

int CtcMinInputLength(const int32_t* labels, int label_length) {
  int n = label_length;
  for (int i = 1; i < label_length; ++i) n += labels[i] == labels[i - 1];
  return n;
}

template <typename Real>
Status CtcLoss(const Real* log_probs, int input_length, int V, const int32_t* labels,
               int label_length, const CtcOptions& options, Real* loss, Real* grad_logits) {
  SLUICE_RETURN_IF_ERROR(CheckArgs(input_length, V, labels, label_length, options));
  std::vector<double> work;
  Lattice(log_probs, input_length, V, labels, label_length, options.blank, work, loss,
          grad_logits, options.zero_infinity);
  return Status::OK();
}

template <typename Real>
Status CtcLossBatch(const Real* log_probs, int B, int T_max, int V, const int32_t* labels,
                    int S_max, const int32_t* input_lengths, const int32_t* label_lengths,
                    const CtcOptions& options, Real* losses, Real* grad_logits,
                    const Real* grad_scale) {
  if (B < 0 || T_max < 0 || S_max < 0)
    return Status::InvalidArgument("ctc: negative batch dimension");
  for (int b = 0; b < B; ++b) {
    const std::string where = "ctc: utterance " + std::to_string(b) + ": ";
    if (input_lengths[b] > T_max || label_lengths[b] > S_max)
      return Status::InvalidArgument(where + "input_length " + std::to_string(input_lengths[b]) +
                                     " or label_length " + std::to_string(label_lengths[b]) +
                                     " exceeds the padded size");
    Status st = CheckArgs(input_lengths[b], V, labels + static_cast<size_t>(b) * S_max,
                          label_lengths[b], options);
    if (!st.ok()) return Status::InvalidArgument(where + st.message());
  }
  std::vector<double> work;
  const size_t utt = static_cast<size_t>(T_max) * V;
  for (int b = 0; b < B; ++b) {
    Real* g = grad_logits ? grad_logits + b * utt : nullptr;
    Lattice(log_probs + b * utt, input_lengths[b], V, labels + static_cast<size_t>(b) * S_max,
            label_lengths[b], options.blank, work, &losses[b], g, options.zero_infinity);
    if (g == nullptr) continue;
    const size_t valid = static_cast<size_t>(input_lengths[b]) * V;
    if (grad_scale != nullptr) {
      for (size_t i = 0; i < valid; ++i) g[i] *= grad_scale[b];
    }
    for (size_t i = valid; i < utt; ++i) g[i] = 0;
  }
  return Status::OK();
}

template Status CtcLoss<float>(const float*, int, int, const int32_t*, int, const CtcOptions&,
                               float*, float*);
template Status CtcLoss<double>(const double*, int, int, const int32_t*, int, const CtcOptions&,
                                double*, double*);
template Status CtcLossBatch<float>(const float*, int, int, int, const int32_t*, int,
                                    const int32_t*, const int32_t*, const CtcOptions&, float*,
                                    float*, const float*);
template Status CtcLossBatch<double>(const double*, int, int, int, const int32_t*, int,
                                     const int32_t*, const int32_t*, const CtcOptions&, double*,
                                     double*, const double*);

}  // namespace sluice::reference
