// The feature flags every tool shares, as a struct: Kaldi's names and units
// (compute-fbank-feats) for fbank, the DeepSpeech2 / torch.stft convention for the spectrogram,
// and their resolution into the loader's feature options for audio at a given rate. The command
// line is tools/common/feature_options.h's (AddFeatureOptions); this half is CLI-free: it is
// LoaderOptions::features, which Loader::Open resolves at the dataset's rate.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "../base/fields.h"
#include "../base/status.h"
#include "../features/fbank_options.h"
#include "../features/spectrogram_options.h"

namespace sluice::loader {

struct FeatureArgs {
  std::string kind;               // "fbank" or "spectrogram" ("" = none, where allowed)
  float frame_length_ms = 0;      // 0: the kind's default (fbank 25, spectrogram 20)
  float frame_shift_ms = 10;      // both kinds
  std::string window_type;        // "": the kind's default (fbank povey, spectrogram hamming)
  std::optional<bool> snip_edges;  // fbank: Kaldi's (default true); spectrogram: false means
                                   // torch's center=True (its default)
  features::FbankOptions fbank;    // the fbank-only flags (rate and the four above: not used)
  features::SpectrogramOptions spectrogram;  // the spectrogram-only flags (same)
};

// FeatureArgs' table (base/fields.h): the shared flags, then the fbank and spectrogram tables.
template <OptionsOf<FeatureArgs> O, class V>
void VisitFields(O& o, V&& v) {
  v(FieldInfo{"frame_length_ms", "--frame-length",
              "Frame length (ms); 0: 25 for fbank, 20 for spectrogram", Affects::kWhat, 0},
    o.frame_length_ms);
  v(FieldInfo{"frame_shift_ms", "--frame-shift", "Frame shift (ms)", Affects::kWhat, 0},
    o.frame_shift_ms);
  v(FieldInfo{"window_type", "--window-type",
              "povey, hamming, hanning, rectangular, blackman, sine (default: povey for fbank, "
              "hamming for spectrogram)"},
    o.window_type);
  v(FieldInfo{"snip_edges", "--snip-edges",
              "Whole frames only (Kaldi); false: fbank mirrors the edges, spectrogram centres "
              "frames as torch.stft(center=True). Default: true for fbank, false for the "
              "spectrogram"},
    o.snip_edges);
  v(FieldInfo{"fbank", nullptr, "fbank options"}, o.fbank);
  v(FieldInfo{"spectrogram", nullptr, "spectrogram options"}, o.spectrogram);
}

struct FeatureConfig {
  features::FbankOptions fbank;
  features::SpectrogramOptions spectrogram;
  bool is_fbank = true;
};

// `a` (kind "fbank" or "spectrogram") with the kind's defaults filled in, as the computer's
// options with the rate left 0, unchecked: what MakeFeatureConfig checks at a rate, and what a
// configuration records (two arguments that resolve alike compute alike). InvalidArgument for an
// unknown kind or window, naming the field as MakeFeatureConfig does.
Status ResolveFeatureArgs(const FeatureArgs& a, FeatureConfig* out, const std::string& table = "");

// Validates `a` for input at `sample_rate` Hz and resolves the kind's defaults; InvalidArgument
// names the field by its key after `table`, the path of `a` in the caller's table ("features."
// in LoaderOptions'; "" where FeatureArgs is a tool's own).
Status MakeFeatureConfig(const FeatureArgs& a, int sample_rate, FeatureConfig* out,
                         const std::string& table = "");

// manifest.json "features" for precomputed features (docs/formats/manifest.md); the loader's
// writer (loader/features_json.h), beside its reader.
nlohmann::json FeatureConfigToJson(const FeatureConfig& c);

}  // namespace sluice::loader
