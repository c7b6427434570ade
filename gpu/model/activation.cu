// Feed-forward activations, GELU and Swish (gpu/model/ops.h), against reference/activation.
#include "gpu/model/ops.h"

#include <cmath>

#include "gpu/model/common.cuh"

namespace sluice::gpu::model {
namespace {

using internal::BF, internal::GridFor, internal::S, internal::kThreads;

// ---- Activations, evaluated in double like the reference, rounded once ----
// GELU, exact erf form.
struct Gelu {
  __device__ static double F(double x) { return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440)); }
  __device__ static double Grad(double x) {
    const double cdf = 0.5 * (1.0 + erf(x * 0.70710678118654752440));
    const double pdf = 0.39894228040143267794 * exp(-0.5 * x * x);
    return cdf + x * pdf;
  }
};
// Swish (SiLU): x * sigmoid(x), the sigmoid in the reference's overflow-free form.
struct Swish {
  __device__ static double Sigmoid(double x) {
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    const double e = exp(x);
    return e / (1.0 + e);
  }
  __device__ static double F(double x) { return x * Sigmoid(x); }
  __device__ static double Grad(double x) {
    const double s = Sigmoid(x);
    return s + x * s * (1.0 - s);
  }
};

template <typename Act>
__global__ void BiasActivationKernel(float* pre, __nv_bfloat16* act_b, float* act_f,
                                     const float* bias, size_t n, int C) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float h = bias ? pre[i] + bias[i % C] : pre[i];
    pre[i] = h;
    const float g = static_cast<float>(Act::F(h));
    act_b[i] = __float2bfloat16_rn(g);
    if (act_f) act_f[i] = g;
  }
}

template <typename Act>
__global__ void ActivationBackwardKernel(float* d, __nv_bfloat16* db, const float* dact,
                                         const float* pre, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float v = static_cast<float>(dact[i] * Act::Grad(pre[i]));
    if (d) d[i] = v;
    if (db) db[i] = __float2bfloat16_rn(v);
  }
}

}  // namespace

Status BiasActivationForward(reference::Activation act, float* pre, Bf16* act_bf16, float* act_f32,
                             const float* bias, int N, int C, void* stream) {
  const size_t n = static_cast<size_t>(N) * C;
  if (n == 0) return Status::OK();
  switch (act) {
    case reference::Activation::kGelu:
      SLUICE_LAUNCH(BiasActivationKernel<Gelu>, GridFor(n, kThreads), kThreads, 0, S(stream))(
          pre, BF(act_bf16), act_f32, bias, n, C);
      break;
    case reference::Activation::kSwish:
      SLUICE_LAUNCH(BiasActivationKernel<Swish>, GridFor(n, kThreads), kThreads, 0, S(stream))(
          pre, BF(act_bf16), act_f32, bias, n, C);
      break;
    default:
      return Status::Unsupported("BiasActivationForward: activation " +
                                 std::to_string(static_cast<int>(act)));
  }
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

Status ActivationBackward(reference::Activation act, float* dpre, Bf16* dpre_bf16,
                          const float* dact, const float* pre, size_t n, void* stream) {
  if (n == 0) return Status::OK();
  switch (act) {
    case reference::Activation::kGelu:
      SLUICE_LAUNCH(ActivationBackwardKernel<Gelu>, GridFor(n, kThreads), kThreads, 0, S(stream))
      (dpre, BF(dpre_bf16), dact, pre, n);
      break;
    case reference::Activation::kSwish:
      SLUICE_LAUNCH(ActivationBackwardKernel<Swish>, GridFor(n, kThreads), kThreads, 0, S(stream))
      (dpre, BF(dpre_bf16), dact, pre, n);
      break;
    default:
      return Status::Unsupported("ActivationBackward: activation " +
                                 std::to_string(static_cast<int>(act)));
  }
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

}  // namespace sluice::gpu::model
