// The MFU estimate of sluice-train --device cuda (docs/train.md, "MFU"): the model's FLOPs for a
// training step on a padded batch, from the configuration and the shapes alone, and the device's
// dense bf16 peak from a table of known GPUs. An estimate, not a measurement: it counts the
// multiply-adds of the convolutions, linears and attention (2 FLOPs each), forward x 3 for
// forward + backward, and nothing for the pointwise, normalisation, softmax and CTC work.
#pragma once

#include <cstdint>
#include <string>

#include "reference/model.h"

namespace sluice::train {

// Forward FLOPs of the model on a batch of B rows padded to T frames.
double ForwardFlops(const reference::ModelConfig& config, int64_t B, int64_t T);
// A training step: 3 x ForwardFlops (the backward computes two products per forward one).
double TrainStepFlops(const reference::ModelConfig& config, int64_t B, int64_t T);

// Dense (no sparsity) bf16 tensor-core peak in FLOP/s of a device named like
// gpu::DeviceDescription ("NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)"), from the vendors' data
// sheets: H100 SXM and H200 989 T, H100 NVL 835 T, H100 PCIe 756 T, A100 312 T, L40S 362 T,
// B200 2250 T. 0 for anything else (the MFU is then reported as 0).
double PeakBf16Flops(const std::string& device_description);

}  // namespace sluice::train
