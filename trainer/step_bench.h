// One training step of the CTC model on a synthetic batch, timed on the device engine: the
// sluice side of tools/bench/asr_torch_step.py (PyTorch eager at the same shape), run by
// `sluice-bench step` (docs/benchmarks.md). A step is what sluice-train's device engine does per
// batch: forward (bf16 GEMMs, fp32 accumulation), CTC, backward, clip to a global norm, AdamW, each
// bracketed by a device synchronisation as the script brackets its steps with
// torch.cuda.synchronize(). The batch is already on the device: no loader, no feeder.
// CUDA-free header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::train {

struct StepBenchOptions {
  std::string preset = "small";  // tiny or small (reference::ModelConfig)
  int vocab = 32;                // classes including the blank (0)
  int n_mels = 80;
  int batch = 16;
  int frames = 1000;             // T: input frames of the longest row
  bool uniform_lengths = false;  // false: every row has `frames`; true: each in [frames/2, frames]
  double label_ratio = 0.4;      // labels per encoder frame
  int steps = 20;
  int warmup_steps = 5;
  double dropout = 0.1;
  double lr = 3e-3;
  double weight_decay = 0.01;
  double clip = 1.0;
  uint64_t seed = 1;
};

struct StepBenchResult {
  std::string device;  // gpu::DeviceDescription
  int64_t parameters = 0;
  int encoder_frames = 0;            // the subsampled length of the longest row
  int64_t frames_total = 0;          // input frames of the batch (its rows' lengths)
  int64_t encoder_frames_total = 0;  // their subsampled lengths
  std::vector<double> step_seconds;  // the timed steps (after the warm-up)
  double step_flops = 0;             // TrainStepFlops at the batch's padded shape
  double peak_flops = 0;             // PeakBf16Flops of the device (0: unknown card)
  double first_loss = 0, last_loss = 0;
  int64_t gemm_fallbacks = 0, gemm_under_aligned = 0;
};

}  // namespace sluice::train
