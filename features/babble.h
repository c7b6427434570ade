// Babble (waveform_augment_options.h, BabbleOptions): the sum of K other utterances of the
// training data, each an excerpt looped or cut to the utterance's length and scaled to the same
// energy so that no speaker drowns the others, added at a drawn signal-to-noise ratio. The picks
// come from a pool of utterances held in memory (loader/augment_sources.h) and never include the
// record itself: each pool clip carries its record id in the training data.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "features/waveform_augment_options.h"

namespace sluice::features {

// A pool clip's id when it is not a record of the training data (a separate --babble-data
// dataset): never equal to a record being augmented.
inline constexpr uint64_t kNotATrainingRecord = ~uint64_t{0};

struct BabbleDraw {
  bool apply = false;
  double snr_db = 0.0;
  int speakers = 0;                                 // picks used, <= max_speakers
  std::array<uint64_t, kMaxBabbleSpeakers> clip{};  // pool indices, distinct
  std::array<double, kMaxBabbleSpeakers> offset{};  // each excerpt's start (NoiseStart)
};

// K uniform in [min_speakers, max_speakers], capped at the pool's clips other than record_id;
// distinct pool indices whose ids (pool_ids[i]) differ from record_id. apply = false when no
// clip is eligible.
BabbleDraw DrawBabble(const BabbleOptions& opt, uint64_t key, const std::vector<uint64_t>& pool_ids,
                      uint64_t record_id);

// x += g * sum of the picked excerpts (each at unit mean energy over n samples), g such that
// the SNR over x is d.snr_db. scratch holds the sum (reused). Returns false and leaves x
// unchanged when x or the sum has no energy.
bool AddBabble(float* x, size_t n, const std::vector<std::vector<float>>& pool, const BabbleDraw& d,
               std::vector<float>* scratch);

}  // namespace sluice::features
