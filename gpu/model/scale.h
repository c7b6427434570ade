// x *= s over n floats on the device: the data-parallel weighting of a rank's gradient before
// the NCCL average (trainer/data_parallel.h, GradientScale). CUDA-free declaration.
#pragma once

#include <cstddef>

#include "base/status.h"

namespace sluice::gpu::model {

// Enqueued on `stream`; s == 1 enqueues nothing (the bits stay as they are). One rounded float
// multiply per element, as the CPU trainer's `grads[i] *= s`.
Status Scale(float* x, size_t n, float s, void* stream);

}  // namespace sluice::gpu::model
