// Small CUDA kernels gpu/ needs outside the trainer, behind CUDA-free declarations.
#pragma once

#include "base/status.h"

namespace sluice::gpu {

// Enqueues one single-thread kernel on `stream` that busy-waits `seconds` of GPU time, read from
// the %globaltimer register (nanoseconds), so it needs no clock-rate calibration. The synthetic
// consumer of sluice-bench feed and of the gpu tests: a stand-in for a training step.
Status SpinOnStream(void* stream, double seconds);

}  // namespace sluice::gpu
