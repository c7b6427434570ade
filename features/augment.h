// Training-time augmentation for the loader: SpecAugment masks and speed perturbation. Every
// random choice is a pure function of (seed, epoch, record id), so an epoch replays bit-identically
// on any thread count and after a resume (DESIGN.md, "Determinism").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "features/augment_options.h"
#include "features/resample.h"

namespace sluice::features {

struct SpecAugmentMask {
  bool time = false;  // true: frames [begin, begin + width); false: bins [begin, begin + width)
  int64_t begin = 0;
  int64_t width = 0;
};

// The masks for one utterance of `frames` x `dim`, appended to *masks (cleared first).
void DrawSpecAugmentMasks(const SpecAugmentOptions& opt, uint64_t seed, uint64_t epoch,
                          uint64_t record_id, int64_t frames, int dim,
                          std::vector<SpecAugmentMask>* masks);

// Applies those masks in place to feats [frames, dim] (row-major). Allocation-free.
void SpecAugment(const SpecAugmentOptions& opt, uint64_t seed, uint64_t epoch, uint64_t record_id,
                 float* feats, int64_t frames, int dim);

// The key of the speed factor's draw for one record in one epoch (the waveform chain's speed
// transform draws with it too, waveform_augment.h).
uint64_t SpeedFactorKey(uint64_t seed, uint64_t epoch, uint64_t record_id);

// The factor for one record in one epoch: factors[UniformInt(0, size - 1)] of SpeedFactorKey.
double PickSpeedFactor(const SpeedPerturbOptions& opt, uint64_t seed, uint64_t epoch,
                       uint64_t record_id);

// Plays `in` (at sample_rate Hz) `factor` times faster: resamples it as if it had been recorded
// at sample_rate * factor. Output has round(n / factor) samples at the same rate; factor 1 copies.
// InvalidArgument for factor <= 0.
Status SpeedPerturb(const float* in, size_t n, int sample_rate, double factor,
                    Resampler* resampler, std::vector<float>* out);

}  // namespace sluice::features
