#include "loader_flags.h"

#include <cstring>

#include "options_cli.h"

namespace sluice::tools {

void AddLoaderOptions(CLI::App* app, loader::LoaderOptions* o, FeatureArgs* features) {
  // The feature computers' options come from the feature flags, with the kind's defaults.
  AddOptions(app, o, [](const FieldInfo& f) {
    return std::strcmp(f.key, "fbank") != 0 && std::strcmp(f.key, "spectrogram") != 0;
  });
  AddFeatureOptions(app, features);
}

Status ResolveLoaderFeatures(const FeatureArgs& features, int sample_rate,
                             loader::LoaderOptions* o) {
  o->use_precomputed = o->kind == loader::FeatureKind::kPrecomputed;
  if (o->kind != loader::FeatureKind::kFbank && o->kind != loader::FeatureKind::kSpectrogram)
    return Status::OK();
  FeatureArgs a = features;
  a.kind = loader::FeatureKindName(o->kind);
  FeatureConfig fc;
  SLUICE_RETURN_IF_ERROR(MakeFeatureConfig(a, sample_rate, &fc));
  o->fbank = fc.fbank;
  o->spectrogram = fc.spectrogram;
  return Status::OK();
}

}  // namespace sluice::tools
