// Reductions (gpu/model/ops.h): column sums over rows (bias gradients) and the batch's mean loss,
// in a fixed order: deterministic, no atomics.
#include "gpu/model/ops.h"

#include "gpu/model/common.cuh"
#include "gpu/model/column_reduce.cuh"

namespace sluice::gpu::model {
namespace {

using internal::S, internal::Chunks, internal::ColumnReduceAdd, internal::ReadValue;

__global__ void MeanKernel(float* out, const float* in, int B) {
  double s = 0.0;
  for (int b = 0; b < B; ++b) s += in[b];
  out[0] = static_cast<float>(s / B);
}

}  // namespace

size_t ColumnSumScratch(int N, int C) {
  return N <= 0 || C <= 0 ? 0 : static_cast<size_t>(Chunks(N)) * C;
}

Status ColumnSumAdd(float* dst, const float* in, int N, int C, float* scratch, void* stream) {
  return ColumnReduceAdd(dst, N, C, scratch, ReadValue{in, C}, stream);
}

Status MeanOf(float* out, const float* in, int B, void* stream) {
  if (B <= 0) return Status::InvalidArgument("MeanOf: empty");
  SLUICE_LAUNCH(MeanKernel, 1, 1, 0, S(stream))(out, in, B);
  SLUICE_LAUNCH_CHECK();
  return Status::OK();
}

}  // namespace sluice::gpu::model
