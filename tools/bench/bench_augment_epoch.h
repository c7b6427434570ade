// sluice-bench augment --dataset: whole loader epochs over one dataset with the waveform
// augmentation chain off and with every transform on, side by side in one run (docs/augment.md,
// "Cost"): hours of audio per second of one core, and the cores that feed a trainer consuming a
// given number of hours of audio per second.
#pragma once

#include <string>

namespace sluice::bench {

struct AugmentEpochArgs {
  std::string dataset;     // the training data (directory or URL)
  std::string noise_data;  // "" leaves additive noise out of the "on" epoch
  std::string rir_data;    // "" leaves reverberation out
  int threads = 0;         // loader decode threads (0 = the usable cores)
  double probability = 1;  // of every transform in the "on" epoch
  double codec_probability = -1;  // the codecs' own; below 0: `probability`
  std::string features = "fbank";
  // Hours of audio per second the trainer consumes. Default: docs/gpu.md's measured step of the
  // small preset on an H100, 24.62 ms for 32 rows of 1600 frames (10 ms hop): 512 s of audio per
  // step, 5.78 hours per second (rows at the batch's longest length: an upper bound).
  double consume_hours_per_second = 512.0 / 0.02462 / 3600.0;
  bool json = false;
};

// 0 when both epochs ran, 1 (with the error on stderr) otherwise.
int RunAugmentEpoch(const AugmentEpochArgs& a);

}  // namespace sluice::bench
