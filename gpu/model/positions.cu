// Sinusoidal positions with the subsampling linear's bias (gpu/model/ops.h), as the reference.
#include "gpu/model/ops.h"

#include <cmath>

#include "gpu/model/common.cuh"

namespace sluice::gpu::model {
namespace {

using internal::GridFor, internal::S, internal::kThreads;

__global__ void AddBiasPositionsKernel(float* x, const float* bias, int B, int T, int C) {
  const size_t n = static_cast<size_t>(B) * T * C;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const int c = i % C;
    const int t = (i / C) % T;
    const double angle = t / pow(10000.0, static_cast<double>(c - c % 2) / C);
    float v = x[i];
    if (bias) v += bias[c];
    v += static_cast<float>(c % 2 == 0 ? sin(angle) : cos(angle));
    x[i] = v;
  }
}

}  // namespace

Status AddBiasPositions(float* x, const float* bias, int B, int T, int C, void* stream) {
  const size_t n = static_cast<size_t>(B) * T * C;
  if (n == 0) return Status::OK();
  SLUICE_LAUNCH(AddBiasPositionsKernel, GridFor(n, kThreads), kThreads, 0, S(stream))
  (x, bias, B, T, C);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

}  // namespace sluice::gpu::model
