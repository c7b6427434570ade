// The loader's flags, the same in every tool that runs a loader (sluice-bench epoch, and by name
// and meaning sluice-train's): every flag of LoaderOptions' table (loader/options.h: --features,
// --cmvn, --threads, --max-frames, --spec-augment, ...) plus the feature flags
// (feature_options.h), which set the fbank and spectrogram options with the kind's defaults.
#pragma once

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "feature_options.h"
#include "loader/options.h"

namespace sluice::tools {

void AddLoaderOptions(CLI::App* app, loader::LoaderOptions* o, FeatureArgs* features);

// After parsing: o->fbank or o->spectrogram from `features` for o->kind at the dataset's
// `sample_rate` (nothing for raw and precomputed, where use_precomputed is set).
Status ResolveLoaderFeatures(const FeatureArgs& features, int sample_rate,
                             loader::LoaderOptions* o);

}  // namespace sluice::tools
