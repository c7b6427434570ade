// Feature options on the command line, with Kaldi's names and units (compute-fbank-feats), and
// their record in manifest.json. Shared by the tools so that one flag means the same thing
// everywhere. The per-kind flags come from the tables beside features::FbankOptions and
// features::SpectrogramOptions (base/fields.h); the four below are shared by both kinds, with
// defaults that depend on the kind.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/fields.h"
#include "base/status.h"
#include "features/fbank.h"
#include "features/spectrogram.h"

namespace sluice::tools {

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

// Adds --frame-length, --frame-shift, --window-type, --snip-edges and every flag of the fbank and
// spectrogram tables (--num-mel-bins, --dither, ..., --n-fft, --normalize) to `app` (the kind
// itself, and the sample rate where a tool chooses it, are the caller's). Defaults are the
// library's: Kaldi's for fbank (whole frames) and the DeepSpeech2 / torch.stft(center=True)
// convention for the spectrogram (centred frames), so a flag left out means the same in
// shardify, sluice-bench, sluice-features and sluice-train.
void AddFeatureOptions(CLI::App* app, FeatureArgs* a);

struct FeatureConfig {
  features::FbankOptions fbank;
  features::SpectrogramOptions spectrogram;
  bool is_fbank = true;
};

// Validates `a` for input at `sample_rate` Hz and resolves the kind's defaults; InvalidArgument
// names the flag.
Status MakeFeatureConfig(const FeatureArgs& a, int sample_rate, FeatureConfig* out);

// manifest.json "features" for precomputed features (docs/formats/manifest.md); the loader's
// writer (loader/features_json.h), beside its reader.
nlohmann::json FeatureConfigToJson(const FeatureConfig& c);

}  // namespace sluice::tools
