#include "gpu/model/ctc.h"

#include "gpu/model/common.cuh"

namespace sluice::gpu::model {
namespace {

using internal::S;
using internal::kThreads;

// log(exp(a) + exp(b)); -inf + -inf stays -inf (no inf - inf).
__device__ __forceinline__ double LogAdd(double a, double b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  return a > b ? a + log1p(exp(b - a)) : b + log1p(exp(a - b));
}

__global__ void CtcKernel(const float* log_probs, int T_max, int V, const int32_t* labels,
                          int S_max, const int32_t* input_lengths, const int32_t* label_lengths,
                          bool zero_infinity, float grad_scale, float* losses, float* grad_logits,
                          double* workspace, int32_t* bad) {
  const int b = blockIdx.x;
  const int tid = threadIdx.x, nt = blockDim.x;
  const int T = input_lengths[b];
  const int L = label_lengths[b];
  const int32_t* lab = labels + static_cast<size_t>(b) * S_max;
  const size_t utt = static_cast<size_t>(T_max) * V;
  const float* lp = log_probs + b * utt;
  float* g = grad_logits ? grad_logits + b * utt : nullptr;

  // Validate on the device: a bad utterance gets loss 0, zero gradient, and the flag.
  bool invalid = T < 0 || T > T_max || L < 0 || L > S_max;
  if (!invalid)
    for (int i = tid; i < L; i += nt) invalid |= lab[i] < 1 || lab[i] >= V;
  invalid = __syncthreads_or(invalid);
  if (invalid) {
    if (tid == 0) {
      losses[b] = 0.0f;
      if (bad) *bad = b + 1;
    }
    if (g)
      for (size_t i = tid; i < utt; i += nt) g[i] = 0.0f;
    return;  // uniform across the block
  }

  const int Sn = 2 * L + 1;        // states of this utterance
  const int Sw = 2 * S_max + 1;    // row stride of the workspace
  double* alpha = workspace + static_cast<size_t>(b) * 2 * T_max * Sw;
  double* beta = alpha + static_cast<size_t>(T_max) * Sw;
  auto sym = [&](int s) { return s % 2 == 0 ? 0 : lab[s / 2]; };
  auto can_skip = [&](int s) { return s % 2 == 1 && s >= 2 && lab[s / 2] != lab[s / 2 - 1]; };

  double log_p;
  if (T == 0) {
    log_p = L == 0 ? 0.0 : -INFINITY;
  } else {
    for (int s = tid; s < Sn; s += nt) alpha[s] = s == 0 ? lp[0] : s == 1 ? lp[sym(1)] : -INFINITY;
    __syncthreads();
    for (int t = 1; t < T; ++t) {
      const double* prev = alpha + static_cast<size_t>(t - 1) * Sw;
      double* cur = alpha + static_cast<size_t>(t) * Sw;
      const float* row = lp + static_cast<size_t>(t) * V;
      for (int s = tid; s < Sn; s += nt) {
        double a = prev[s];
        if (s >= 1) a = LogAdd(a, prev[s - 1]);
        if (can_skip(s)) a = LogAdd(a, prev[s - 2]);
        cur[s] = a == -INFINITY ? -INFINITY : a + row[sym(s)];
      }
      __syncthreads();
    }
    const double* last = alpha + static_cast<size_t>(T - 1) * Sw;
    log_p = Sn > 1 ? LogAdd(last[Sn - 1], last[Sn - 2]) : last[Sn - 1];
  }
  const bool impossible = log_p == -INFINITY;
  if (tid == 0)
    losses[b] = impossible ? (zero_infinity ? 0.0f : INFINITY) : static_cast<float>(-log_p);
  if (g == nullptr) return;
  if (T == 0 || impossible) {
    for (size_t i = tid; i < utt; i += nt) g[i] = 0.0f;
    return;  // uniform: T and log_p are the same in every thread
  }

  const float* lp_last = lp + static_cast<size_t>(T - 1) * V;
  double* b_last = beta + static_cast<size_t>(T - 1) * Sw;
  for (int s = tid; s < Sn; s += nt)
    b_last[s] = s >= Sn - 2 ? lp_last[sym(s)] : -INFINITY;  // the last blank and the last label
  __syncthreads();
  for (int t = T - 2; t >= 0; --t) {
    const double* next = beta + static_cast<size_t>(t + 1) * Sw;
    double* cur = beta + static_cast<size_t>(t) * Sw;
    const float* row = lp + static_cast<size_t>(t) * V;
    for (int s = tid; s < Sn; s += nt) {
      double v = next[s];
      if (s + 1 < Sn) v = LogAdd(v, next[s + 1]);
      if (s + 2 < Sn && can_skip(s + 2)) v = LogAdd(v, next[s + 2]);
      cur[s] = v == -INFINITY ? -INFINITY : v + row[sym(s)];
    }
    __syncthreads();
  }

  // softmax, then minus the posterior (one thread per frame: no two threads touch one row), then
  // the scale: the reference's order of float operations.
  const size_t valid = static_cast<size_t>(T) * V;
  for (size_t i = tid; i < utt; i += nt)
    g[i] = i < valid ? static_cast<float>(exp(static_cast<double>(lp[i]))) : 0.0f;
  __syncthreads();
  for (int t = tid; t < T; t += nt) {
    const double* a = alpha + static_cast<size_t>(t) * Sw;
    const double* bb = beta + static_cast<size_t>(t) * Sw;
    const float* row = lp + static_cast<size_t>(t) * V;
    float* gr = g + static_cast<size_t>(t) * V;
    for (int s = 0; s < Sn; ++s) {
      if (a[s] == -INFINITY || bb[s] == -INFINITY) continue;
      const int k = sym(s);
      gr[k] -= static_cast<float>(exp(a[s] + bb[s] - row[k] - log_p));
    }
  }
  __syncthreads();
  for (size_t i = tid; i < valid; i += nt) g[i] *= grad_scale;
}

}  // namespace

size_t CtcWorkspaceElems(int B, int T_max, int S_max) {
  if (B <= 0 || T_max <= 0) return 0;
  return 2 * static_cast<size_t>(B) * T_max * (2 * static_cast<size_t>(S_max) + 1);
}

Status CtcLossBatch(const float* log_probs, int B, int T_max, int V, const int32_t* labels,
                    int S_max, const int32_t* input_lengths, const int32_t* label_lengths,
                    bool zero_infinity, float grad_scale, float* losses, float* grad_logits,
                    double* workspace, int32_t* bad, void* stream) {
  if (B < 0 || T_max < 0 || S_max < 0 || V < 1)
    return Status::InvalidArgument("ctc: negative batch dimension or V < 1");
  if (B == 0) return Status::OK();
  SLUICE_LAUNCH(CtcKernel, B, kThreads, 0, S(stream))
  (log_probs, T_max, V, labels, S_max, input_lengths, label_lengths, zero_infinity, grad_scale,
   losses, grad_logits, workspace, bad);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

}  // namespace sluice::gpu::model
