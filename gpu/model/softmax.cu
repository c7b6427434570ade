// log_softmax over rows (gpu/model/ops.h), against reference/softmax.
#include "gpu/model/ops.h"

#include <cmath>

#include "gpu/model/common.cuh"

namespace sluice::gpu::model {
namespace {

using internal::S, internal::kThreads;

// ---- log_softmax: one block per row, max in fp32, sum of exponentials in double ----
__global__ void BiasLogSoftmaxKernel(float* out, const float* in_rows, int64_t in_ld,
                                     const float* bias, int V) {
  __shared__ float shf[32];
  __shared__ double shd[32];
  const float* in = in_rows + static_cast<size_t>(blockIdx.x) * in_ld;
  out += static_cast<size_t>(blockIdx.x) * V;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < V; j += blockDim.x)
    m = fmaxf(m, in[j] + (bias ? bias[j] : 0.0f));
  m = internal::BlockMax(m, shf);
  double s = 0.0;
  for (int j = threadIdx.x; j < V; j += blockDim.x)
    s += exp(static_cast<double>(in[j] + (bias ? bias[j] : 0.0f)) - m);
  s = internal::BlockSum(s, shd);
  const double ls = log(s);
  for (int j = threadIdx.x; j < V; j += blockDim.x)
    out[j] =
        static_cast<float>(static_cast<double>(in[j] + (bias ? bias[j] : 0.0f)) - m - ls);
}

}  // namespace

Status BiasLogSoftmaxForward(float* out, const float* in, int64_t in_ld, const float* bias, int N,
                             int V, void* stream) {
  if (N <= 0) return Status::OK();
  if (N > 2147483647 || V < 1 || in_ld < V) return Status::InvalidArgument("log_softmax: bad shape");
  SLUICE_LAUNCH(BiasLogSoftmaxKernel, N, kThreads, 0, S(stream))(out, in, in_ld, bias, V);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

}  // namespace sluice::gpu::model
