// manifest.json "features" (docs/formats/manifest.md): the options of the precomputed features a
// dataset's records hold, written by shardify audio --features and read back by the loader, which
// rebuilds the computer from them so that its frame counts agree with the stored shapes. The
// writer and the reader live together so that a field cannot be written under one name and
// looked for under another.
#pragma once

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "features/fbank.h"
#include "features/spectrogram.h"

namespace sluice::loader {

// {"kind", "dtype": "float16", "dim", then every option under the field names of the struct}.
nlohmann::json FbankFeaturesToJson(const features::FbankOptions& o);
nlohmann::json SpectrogramFeaturesToJson(const features::SpectrogramOptions& o);

// Reads either form back into *fbank or *spectrogram (fields absent keep their values; the
// kebab-case names of early manifests are accepted too) and sets *is_fbank. InvalidArgument
// naming manifest.json for a malformed object, Unsupported for another kind.
Status FeaturesFromJson(const nlohmann::json& j, bool* is_fbank, features::FbankOptions* fbank,
                        features::SpectrogramOptions* spectrogram);

}  // namespace sluice::loader
