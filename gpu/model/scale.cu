#include "gpu/model/scale.h"

#include "gpu/model/common.cuh"

namespace sluice::gpu::model {
namespace {

using internal::GridFor;
using internal::S;
using internal::kThreads;

__global__ void ScaleKernel(float* x, size_t n, float s) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    x[i] = __fmul_rn(x[i], s);
}

}  // namespace

Status Scale(float* x, size_t n, float s, void* stream) {
  if (n == 0 || s == 1.0f) return Status::OK();
  SLUICE_LAUNCH(ScaleKernel, GridFor(n, kThreads), kThreads, 0, S(stream))(x, n, s);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

}  // namespace sluice::gpu::model
