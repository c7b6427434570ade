// The clips of the waveform augmentation chain (features/waveform_augment.h): the noise and
// room-impulse-response datasets of LoaderOptions (noise_data, rir_data) and the babble pool
// (babble_data, or the training data itself), ordinary sluice audio
// datasets (shardify them like any audio) read through storage/ like the training data (a
// directory, HTTP(S) or S3, the block cache), decoded once into memory at Open, and shared by the
// decode threads. Their content checksums go into the resolved options, hence the run record.
#pragma once

#include <functional>

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "features/waveform_augment.h"
#include "loader/options.h"
#include "loader/sources.h"

namespace sluice::loader {

struct AugmentSources {
  std::shared_ptr<const features::WaveformSources> clips;  // null when the chain needs none
  std::string noise_content;                               // ManifestFingerprint, hex; "" if none
  std::string rir_content;
  std::string babble_content;  // the babble pool's dataset(s)
  uint64_t bytes = 0;  // memory the clips take (samples and prepared responses)
};

// Opens and decodes the datasets the options' chain uses, at `sample_rate` (the training data's):
// the babble pool from babble_data, or else from `data` (the training data, through its storage)
// with each clip's record id, drawn only among the records `in_epochs` accepts (those select and
// filter keep: a held-out record never reaches training audio).
// InvalidArgument naming the option when a transform with probability > 0 has no dataset, a
// dataset is given that no transform uses (it would be read and ignored), a dataset is not audio,
// is at another rate (with the shardify command that fixes it) or holds no clip, or the clips
// alone exceed memory_budget; the dataset's errors (missing, corrupt) prefixed with the option.
Status LoadAugmentSources(const LoaderOptions& options, const Sources& data, int sample_rate,
                          const std::function<bool(uint64_t)>& in_epochs, AugmentSources* out);

}  // namespace sluice::loader
